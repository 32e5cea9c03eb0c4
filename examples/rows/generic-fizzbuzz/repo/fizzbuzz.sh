#!/usr/bin/env bash
# Usage: fizzbuzz.sh N  -- print 1..N, Fizz for multiples of 3, Buzz for 5, FizzBuzz for both.
n="$1"
for ((i = 1; i <= n; i++)); do
    if ((i % 3 == 0)); then
        echo Fizz
    elif ((i % 5 == 0)); then
        echo Buzz
    else
        echo "$i"
    fi
done
