#!/usr/bin/env bash
# make run EXP=name [SCALE=ci] [LAB_NAME=local] [RESULTS=results] [CEILINGS=results/file.json] [MEASURE_AGAIN=1]:
# run or resume an experiment campaign.
# Rerunning the same command resumes: finished points and repetitions are skipped.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
# --check-only: check the values it reads, that the lab named is up and that trexlab is installed, then stop (make runs
# it so before any recipe: a refusal is one line); --check-values: the values only (make -n, whose answer must not
# depend on the machine's state).
check_only=; case "${1:-}" in --check-only|--check-values) check_only=$1; shift;; esac

exp=${1:-}
[ -n "$exp" ] || refuse "EXP=: usage: make run EXP=<name>; experiments: $(ls experiments | tr '\n' ' ')"
check_experiment "$exp"
named_lab=${LAB_NAME:-}
LAB_NAME=${LAB_NAME:-${LAB:-local}}
check_lab_name "$LAB_NAME"
check_scale "${SCALE:-}"
results=${RESULTS:-results}
check_results "$results"
# The tester's ceilings live in the results root: make run RESULTS=elsewhere reads and records its own
# (CEILINGS=file below it: that file instead; make demo keeps its short self-test's apart from a user's full one).
ceilings=${CEILINGS:-$results/tester-ceilings.json}
check_ceilings "$ceilings" "$results"
[[ -z "${MEASURE_AGAIN:-}" || "$MEASURE_AGAIN" == 1 ]] \
  || refuse "MEASURE_AGAIN=$MEASURE_AGAIN: allowed 1 (a new campaign, not the last one resumed) or nothing"
[ "$check_only" != --check-values ] || exit 0
# Always this lab's inventory: a lab that is not up is never stood in for by another (the campaign's default,
# the local lab's). A lab named by LAB_NAME that is not up is refused here; otherwise the campaign says so, and
# runs without a lab where its generator needs none (sim).
inventory="inventory/generated/$LAB_NAME/hosts.yml"
[ -z "$named_lab" ] || [ -f "$inventory" ] \
  || refuse "LAB_NAME=$named_lab: lab $named_lab is not up (no $inventory): run 'make lab-up LAB_NAME=$named_lab'"
[ -x "$VENV/bin/trexlab" ] || die "no $VENV/bin/trexlab: run 'make setup' first"
args=(campaign "experiments/$exp" --results "$results" --ceilings "$ceilings")
[ -n "${SCALE:-}" ] && args+=(--scale "$SCALE")
# MEASURE_AGAIN=1 (make demo): a complete campaign of the spec is not resumed, a new one measures anew.
[ -n "${MEASURE_AGAIN:-}" ] && args+=(--measure-again)
args+=(--inventory "$inventory")
# What the campaign refuses before it starts (the spec and SCALE, the lab's inventory unless its generator is sim, its
# plan, the lab held by another run, a campaign directory begun otherwise), asked of the campaign itself with the
# same arguments, touching no host and writing nothing (trexlab campaign --check). Through make that is one line, not
# the campaign's and make's "*** [...] Error 2" after it; run without make, the campaign says it itself.
[ -z "$check_only" ] || exec "$VENV/bin/trexlab" "${args[@]}" --check
exec "$VENV/bin/trexlab" "${args[@]}"
