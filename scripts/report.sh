#!/usr/bin/env bash
# make report EXP=name [CAMPAIGN=results/<exp>/<id>]: execute the analysis notebook, export HTML.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"

exp=${1:-}
[ -n "$exp" ] || refuse "EXP=: usage: make report EXP=<name>"
check_experiment "$exp"
[ -x "$VENV/bin/trexlab" ] || die "no $VENV/bin/trexlab: run 'make setup' first"
results=${RESULTS:-results}
check_results "$results"
# CAMPAIGN=: a campaign directory, never an option (CAMPAIGN=-h reached trexlab's own flags) nor lines.
[[ -z "${CAMPAIGN:-}" || ( "$CAMPAIGN" != -* && "$CAMPAIGN" != *[[:cntrl:]]* ) ]] \
  || refuse "CAMPAIGN=$CAMPAIGN: allowed a campaign directory, e.g. $results/$exp/<id> (not one starting with -, no control characters)"
args=(report "$exp" --results "$results")
[ -n "${CAMPAIGN:-}" ] && args+=(--campaign "$CAMPAIGN")
html=$("$VENV/bin/trexlab" "${args[@]}")
say "report: $html"
