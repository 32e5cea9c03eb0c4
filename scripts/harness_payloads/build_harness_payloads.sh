#!/usr/bin/env bash
# Build offline install archives of the CLI agents (runtime included), one per CLI at its pinned version.
#   scripts/harness_payloads/build_harness_payloads.sh OUT_DIR [CLI ...]      (no CLI: all of them)
# Mirrors: set NPM_REGISTRY / PIP_INDEX_URL in the environment. Then, in a config:
#   agent: {type: claude-code, payload_path: OUT_DIR/claude-code-<version>-linux-x64.tar.gz}
set -euo pipefail
out="${1:?usage: $0 OUT_DIR [CLI ...]}"
shift
args=()
if [ "$#" -eq 0 ]; then args+=(--all); else for cli in "$@"; do args+=(--cli "$cli"); done; fi
for var in NPM_REGISTRY PIP_INDEX_URL PIP_EXTRA_INDEX_URL; do
  if [ -n "${!var:-}" ]; then args+=(--install-env "$var=${!var}"); fi
done
cd "$(dirname "$0")/../.."
exec uv run mimoagent payload build -o "$out" "${args[@]}"
