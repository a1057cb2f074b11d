#!/usr/bin/env bash
# make test: what CI runs on a fresh clone.  Installs what it needs first.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
start=$(date +%s)
scripts/setup.sh
scripts/lint.sh
say "pytest"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider --timeout=900 -ra tests "$@"
say "make test took $(( $(date +%s) - start )) s"
