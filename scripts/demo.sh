#!/usr/bin/env bash
# make demo: the main job on the local lab, start to finish, leaving the machine as it was.
#   setup -> lab-up -> configure -> a short campaign (experiments/demo) -> HTML report -> lab-down
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
need_root "make demo"

export LAB=local LAB_NAME=${DEMO_LAB_NAME:-demo} TOPOLOGY=single NETWORKS=1
EXP=${DEMO_EXP:-demo}
RESULTS=${RESULTS:-results}
start=$SECONDS

scripts/setup.sh
# Whatever happens from here on, the lab goes down again.
trap 'say "taking the demo lab down"; scripts/lab.sh down || true' EXIT
scripts/lab.sh up
scripts/lab.sh configure >/dev/null
say "running experiment $EXP (progress below)"
# Each make demo measures anew; only an interrupted demo campaign is resumed (its line below says how to start
# from scratch instead).
RESULTS=$RESULTS MEASURE_AGAIN=1 scripts/run-experiment.sh "$EXP"
campaign=$(ls -td "$RESULTS/$EXP"/*/ | head -n 1)
RESULTS=$RESULTS CAMPAIGN=$campaign scripts/report.sh "$EXP"
say "demo done in $((SECONDS - start)) s; open ${campaign%/}/report.html"
