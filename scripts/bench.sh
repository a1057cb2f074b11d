#!/usr/bin/env bash
# make bench: run every benchmark script; each prints its figures (and may write them under benchmarks/results/).
# Benchmarks are measurements, not tests: they never fail on a figure.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
[ -x "$VENV/bin/python" ] || die "no $VENV: run 'make setup' first"
status=0
for bench in benchmarks/*.py; do
  [ -e "$bench" ] || continue
  say "benchmark $bench"
  "$VENV/bin/python" "$bench" || { say "benchmark $bench failed (exit $?)"; status=1; }
done
exit $status
