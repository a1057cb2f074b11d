#!/usr/bin/env bash
# make bench: run every benchmark script; each prints its figures (and may write them under benchmarks/results/).
# Benchmarks are measurements, not tests: they never fail on a figure.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
# --check-only: that the venv is there, then stop (make runs it so before any recipe: a refusal is one line);
# --check-values: nothing to check (make -n, whose answer must not depend on the machine's state).
[ "${1:-}" != --check-values ] || exit 0
[ -x "$VENV/bin/python" ] || die "no $VENV: run 'make setup' first"
[ "${1:-}" != --check-only ] || exit 0
status=0
for bench in benchmarks/*.py; do
  [ -e "$bench" ] || continue
  say "benchmark $bench"
  "$VENV/bin/python" "$bench" || { say "benchmark $bench failed (exit $?)"; status=1; }
done
exit $status
