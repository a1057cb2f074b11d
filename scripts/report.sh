#!/usr/bin/env bash
# make report EXP=name [CAMPAIGN=results/<exp>/<id>]: execute the analysis notebook, export HTML.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
# --check-only: check the values it reads, that trexlab is installed and what the report refuses before it executes
# the notebook (no campaign of EXP, a CAMPAIGN that is none: trexlab report --check), then stop (make runs it so before
# any recipe: a refusal is one line); --check-values: the values only (make -n, whose answer must not depend on the
# machine's state).
check_only=; case "${1:-}" in --check-only|--check-values) check_only=$1; shift;; esac

exp=${1:-}
[ -n "$exp" ] || refuse "EXP=: usage: make report EXP=<name>"
check_experiment "$exp"
results=${RESULTS:-results}
check_results "$results"
# CAMPAIGN=: a campaign directory, never an option (CAMPAIGN=-h reached trexlab's own flags) nor lines.
[[ -z "${CAMPAIGN:-}" || ( "$CAMPAIGN" != -* && "$CAMPAIGN" != *[[:cntrl:]]* ) ]] \
  || refuse "CAMPAIGN=$CAMPAIGN: allowed a campaign directory, e.g. $results/$exp/<id> (not one starting with -, no control characters)"
[ "$check_only" != --check-values ] || exit 0
[ -x "$VENV/bin/trexlab" ] || die "no $VENV/bin/trexlab: run 'make setup' first"
args=(report "$exp" --results "$results")
[ -n "${CAMPAIGN:-}" ] && args+=(--campaign "$CAMPAIGN")
[ -z "$check_only" ] || exec "$VENV/bin/trexlab" "${args[@]}" --check
html=$("$VENV/bin/trexlab" "${args[@]}")
say "report: $html"
