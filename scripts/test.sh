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
# The VM lab's guest image (about a minute once, then cached in .cache/vm) is built while the providers
# and lint run (after apt's own use above).
if [ "$(id -u)" -eq 0 ] && have qemu-system-x86_64 && have mmdebstrap; then
  mkdir -p .cache/vm
  terraform/labs/vm/scripts/image.sh .cache/vm >.cache/vm/image.log 2>&1 &
  vm_image=$!
  trap 'kill "$vm_image" 2>/dev/null || true' EXIT
fi
# Terraform providers for the MAAS lab's tests and validation, from the Go module proxy (about 45 s cold,
# well under a second once terraform/providers/mirror has them).
# Go's standard install location (go.dev/dl) may be missing from a non-login shell's PATH.
have go || [ ! -x /usr/local/go/bin/go ] || export PATH="/usr/local/go/bin:$PATH"
if have go; then
  scripts/providers.sh
else
  say "go not found: terraform/labs/maas is neither validated nor tested (make providers needs Go)"
fi
scripts/lint.sh
if [ -n "${vm_image:-}" ]; then
  wait "$vm_image" || say "the VM lab's guest image did not build (.cache/vm/image.log); the VM tests will say why"
  trap - EXIT
fi
say "pytest"
# --durations: the slowest tests in the log, to keep make test within its time budget.
"$VENV/bin/python" -m pytest -q -p no:cacheprovider --timeout=900 -ra --durations=30 tests "$@"
say "make test took $(( $(date +%s) - start )) s"
