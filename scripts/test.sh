#!/usr/bin/env bash
# The whole test suite. The bubblewrap, Docker and browser tests need host packages: install the missing
# ones when we can (root on Debian), then run pytest. The Docker tests start their own dockerd.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v chromium >/dev/null || need+=(chromium)
if ((${#need[@]})) && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing host packages: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
exec uv run pytest "$@"
