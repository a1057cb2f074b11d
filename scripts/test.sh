#!/usr/bin/env bash
# make test: what CI runs on a fresh clone.  Installs what it needs first.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
start=$(date +%s)
scripts/setup.sh
# The report test renders HTML in a real browser: Debian's Chromium (test-only, so not in make setup).
if ! have chromium; then
  if [ "$(id -u)" -eq 0 ] && have apt-get; then
    say "installing chromium for the report rendering test"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  else
    say "chromium missing and cannot be installed here (not root or no apt-get): the report rendering test will fail"
  fi
fi
scripts/lint.sh
say "pytest"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider --timeout=900 -ra tests "$@"
say "make test took $(( $(date +%s) - start )) s"
