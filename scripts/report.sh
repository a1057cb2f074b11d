#!/usr/bin/env bash
# make report EXP=name [CAMPAIGN=results/<exp>/<id>]: execute the analysis notebook, export HTML.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"

exp=${1:-}
[ -n "$exp" ] || refuse "EXP=: usage: make report EXP=<name>"
check_experiment "$exp"
[ -x "$VENV/bin/trexlab" ] || die "no $VENV/bin/trexlab: run 'make setup' first"
args=(report "$exp" --results "${RESULTS:-results}")
[ -n "${CAMPAIGN:-}" ] && args+=(--campaign "$CAMPAIGN")
html=$("$VENV/bin/trexlab" "${args[@]}")
say "report: $html"
