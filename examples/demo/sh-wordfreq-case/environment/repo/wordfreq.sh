#!/usr/bin/env bash
# Usage: wordfreq.sh FILE [N]  -- print the N (default 10) most frequent words as "COUNT WORD".
set -euo pipefail
file="$1"
n="${2:-10}"
tr -cs 'A-Za-z' '\n' < "$file" | grep -v '^$' | sort | uniq -c | sort -k1,1nr -k2,2 | head -n "$n" \
    | awk '{print $1, $2}'
