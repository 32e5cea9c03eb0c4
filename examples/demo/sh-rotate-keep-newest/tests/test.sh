#!/bin/bash
# Verifier: run rotate.sh on scratch folders and compare what is left.
mkdir -p /logs/verifier
work=$(mktemp -d)
pass=0; total=0
check() {
    total=$((total + 1))
    if [ "$2" = "$3" ]; then pass=$((pass + 1)); echo "PASS $1"; else echo "FAIL $1: got [$3]"; fi
}
mkdir -p "$work/a"
for d in 2024-01-01 2024-02-01 2024-03-01 2024-04-01; do touch "$work/a/backup-$d.tar"; done
touch "$work/a/notes.txt"
bash /app/rotate.sh "$work/a" 2
check keeps_newest "backup-2024-03-01.tar backup-2024-04-01.tar notes.txt" "$(cd "$work/a" && echo *)"
mkdir -p "$work/b"; touch "$work/b/backup-2024-01-01.tar"
bash /app/rotate.sh "$work/b" 5
check keep_more_than_present "backup-2024-01-01.tar" "$(cd "$work/b" && echo *)"
rm -rf "$work"
reward=0; [ "$pass" -eq "$total" ] && reward=1
echo "$reward" > /logs/verifier/reward.txt
