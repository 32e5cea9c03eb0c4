#!/usr/bin/env bash
# Usage: rotate.sh DIR KEEP  -- delete all but the KEEP newest backup-YYYY-MM-DD.tar files in DIR.
set -euo pipefail
dir="$1"
keep="$2"
ls "$dir"/backup-*.tar 2>/dev/null | sort | tail -n +"$((keep + 1))" | while read -r f; do
    rm -f -- "$f"
done
