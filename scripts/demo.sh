#!/usr/bin/env bash
# make demo: the main job on the local lab, start to finish, leaving the machine as it was.
#   setup -> the tester's self-test (a loopback lab) -> lab-up -> configure -> a short campaign (experiments/demo)
#   -> HTML report -> lab-down
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
# Every value it reads is checked before anything changes: found by the scripts below, a bad one (DEMO_EXP=../x,
# RESULTS=-h) was refused after make setup, two labs made and destroyed and a self-test.
EXP=${DEMO_EXP:-demo}
check_experiment "$EXP" DEMO_EXP
check_lab_name "${DEMO_LAB_NAME:-demo}" DEMO_LAB_NAME
check_scale "${SCALE:-}"
RESULTS=${RESULTS:-results}
check_results "$RESULTS"
# --check-only: those checks, root and what its first step, make setup, refuses, then stop (make runs it so before any
# recipe: a refusal is one line); --check-values: those checks only (make -n, whose answer must not depend on the
# machine's state).
[ "${1:-}" != --check-values ] || exit 0
need_root "make demo"
[ "${1:-}" != --check-only ] || exec scripts/setup.sh --check-only

export LAB=local LAB_NAME=${DEMO_LAB_NAME:-demo} TOPOLOGY=single NETWORKS=1
start=$SECONDS

scripts/setup.sh
# Whatever happens from here on, the lab goes down again (in the topology it is up in).
up_topology=loopback
trap 'say "taking the demo lab down"; TOPOLOGY=$up_topology scripts/lab.sh down || true' EXIT

# First the tester against itself, its two ports joined and no DUT (experiments/tester-selftest at scale demo):
# without its ceiling the demo's results could not say whether they describe the DUT or the tester. The ceiling
# goes to a file of the demo's own, which the demo campaign compares against: a user's results/tester-ceilings.json
# (a full self-test's) is never replaced by this short one.
export CEILINGS=$RESULTS/demo-selftest/tester-ceilings.json
TOPOLOGY=loopback scripts/lab.sh up
say "measuring the tester's own ceiling first: tester-selftest, scale demo (progress below)"
RESULTS=$RESULTS/demo-selftest SCALE=demo MEASURE_AGAIN=1 scripts/run-experiment.sh tester-selftest
TOPOLOGY=loopback scripts/lab.sh down
up_topology=$TOPOLOGY

scripts/lab.sh up
scripts/lab.sh configure >/dev/null
say "running experiment $EXP (progress below)"
# Each make demo measures anew; only an interrupted demo campaign is resumed (its line below says how to start
# from scratch instead).
RESULTS=$RESULTS MEASURE_AGAIN=1 scripts/run-experiment.sh "$EXP"
campaign=$(ls -td "$RESULTS/$EXP"/*/ | head -n 1)
RESULTS=$RESULTS CAMPAIGN=$campaign scripts/report.sh "$EXP"
say "demo done in $((SECONDS - start)) s; open ${campaign%/}/report.html"
