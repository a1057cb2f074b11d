#!/usr/bin/env bash
# make test: what CI runs on a fresh clone.  Installs what it needs first.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
start=$(date +%s)
scripts/setup.sh
# Each step's seconds in the log (since the previous line): make test's time budget is kept step by step.
mark=$start
took() { local now; now=$(date +%s); say "$1 took $(( now - mark )) s"; mark=$now; }
took "setup"
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
# The VM lab's guest image (about a minute once, then cached in .cache/vm) is built while the providers,
# lint and the tests without a lab run (after apt's own use above). It holds a lock while it builds: the
# first lab test waits for it (tests/conftest.py), so no measuring test competes with it for the CPUs.
if [ "$(id -u)" -eq 0 ] && have qemu-system-x86_64 && have mmdebstrap; then
  mkdir -p .cache/vm
  export TREXLAB_VM_IMAGE_BUILD_LOCK="$TREXLAB_ROOT/.cache/vm/build.lock"
  # -o: only flock itself holds the lock, not a helper process the build may leave behind.
  flock -o "$TREXLAB_VM_IMAGE_BUILD_LOCK" terraform/labs/vm/scripts/image.sh .cache/vm >.cache/vm/image.log 2>&1 &
  vm_image=$!
  trap 'kill $(pgrep -P "$vm_image") "$vm_image" 2>/dev/null || true' EXIT  # the providers' build ends by itself
fi
# Terraform providers for the MAAS lab's tests and validation, from the Go module proxy (about 45-105 s cold,
# well under a second once terraform/providers/mirror has them): built in the background while the tests
# without a lab run (output in .cache/providers.log, shown when it ends).
# Go's standard install location (go.dev/dl) may be missing from a non-login shell's PATH.
have go || [ ! -x /usr/local/go/bin/go ] || export PATH="/usr/local/go/bin:$PATH"
mkdir -p .cache
providers=""
if have go; then
  # Lint validates terraform/labs/maas with the mirror: it waits for this lock before it does (scripts/lint.sh).
  export TREXLAB_PROVIDERS_LOCK="$TREXLAB_ROOT/.cache/providers.lock"
  flock -o "$TREXLAB_PROVIDERS_LOCK" scripts/providers.sh >.cache/providers.log 2>&1 &
  providers=$!
else
  say "go not found: terraform/labs/maas is neither validated nor tested (make providers needs Go)"
fi
# Lint (mypy, ansible-lint, every ansible-test sanity test, terraform validate: 1-1.5 min of CPU on a fresh
# clone, and the first time on a machine 2 min more while ansible-test installs its test venvs from PyPI into the
# user's cache: scripts/collection.sh) in the background from here to the end of phase 2: it keeps its caches
# under .cache and that one and touches no namespace or ruleset, so the tests that assert the host and the
# checkout stay as they were can run beside it.
scripts/lint.sh >.cache/lint.log 2>&1 &
lint=$!
# --durations: the slowest tests in the log, to keep make test within its time budget.
pytest=("$VENV/bin/python" -m pytest -q -p no:cacheprovider --timeout=900 -ra --durations=30)
[ $# -gt 0 ] || set -- tests  # scripts/test.sh <paths or pytest options>: the same phases over less
status=0
# A phase that selects nothing (exit 5) is no failure: arguments may leave a phase empty.
phase() { "${pytest[@]}" "$@" || { local rc=$?; [ "$rc" -eq 5 ] || status=$rc; }; took "the phase"; }
# 1. Tests without a lab or terraform: they measure nothing and mostly wait on subprocesses (notebooks, pip,
#    Chromium), so three workers share the two CPUs with the image and provider builds (pytest-xdist). A test
#    file stays on one worker, and tests/swtester's files share one: they build swtester's binaries (release,
#    asan) and run them, and two workers rebuilt a binary the other was running (ETXTBSY).
say "pytest: tests without a lab (3 workers)"
phase -n 3 --dist loadgroup -m "not lab and not terraform" "$@"
if [ -n "$providers" ]; then
  wait "$providers" || { cat .cache/providers.log >&2; die "make providers failed (above)"; }
  cat .cache/providers.log
  took "waiting for the providers"
fi
# 2. The Terraform runs and the lab tests whose assertions no busy CPU changes (lab-up/down, roles, frame counts
#    at low rates, the shipped experiments at CI scale, which must end and report whatever their figures). Four
#    workers (403 s on the fresh clone of fa3a849 here; three took 676 s with lint beside them): the phase is
#    bound by the two CPUs, which the nodes' Ansible modules and sshd share with the tests, so a CPU-second saved
#    in any test of phases 1-2 or in lint shortens it. A test file stays on one worker, and so do the files that
#    share a lab (tests/conftest.py).
say "pytest: terraform and unmeasured lab tests (4 workers)"
phase -n 4 --dist loadgroup -m "terraform or (lab and unmeasured)" "$@"
wait "$lint" || status=$?
took "waiting for lint"
cat .cache/lint.log
# 3. The lab tests that measure traffic, one at a time: they must not share the CPUs (VM-lab tests last).
say "pytest: lab tests that measure (one at a time)"
phase -m "lab and not unmeasured" "$@"
if [ -n "${vm_image:-}" ]; then
  wait "$vm_image" || say "the VM lab's guest image did not build (.cache/vm/image.log); the VM tests said why"
  trap - EXIT
fi
say "make test took $(( $(date +%s) - start )) s"
exit "$status"
