# Shared shell helpers for scripts/*.sh (sourced, not run).
# shellcheck shell=bash
TREXLAB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$TREXLAB_ROOT/.venv}

say()  { printf '%s\n' "trexlab: $*"; }
die()  { printf '%s\n' "trexlab: error: $*" >&2; exit 1; }
# A refused input: exit code 2 (as make and argparse give a usage error), one line naming the variable.
refuse() { local line="trexlab: error: $*"; printf '%s\n' "${line//$'\n'/\\n}" >&2; exit 2; }
# The names the front door accepts (also checked by the Makefile, which runs before these scripts); $2: the
# variable the value came from, when not EXP or LAB_NAME (make demo's DEMO_EXP, DEMO_LAB_NAME).
check_experiment() {
  local var=${2:-EXP}
  [[ "$1" =~ ^[a-z0-9_-]+$ ]] || refuse "$var=$1: an experiment is named with a-z 0-9 _ - (one of: $(ls experiments | tr '\n' ' '))"
  [ -f "experiments/$1/experiment.yml" ] || refuse "$var=$1: no experiments/$1/experiment.yml (one of: $(ls experiments | tr '\n' ' '))"
}
# The longest lab name comes from its one rule, trexlab/rolevalues.py's LAB_NAME_MAX line (the Makefile reads it too).
check_lab_name() {
  local max
  max=$(sed -n 's/^LAB_NAME_MAX = \([1-9][0-9]*\)$/\1/p' "$TREXLAB_ROOT/trexlab/rolevalues.py")
  [ -n "$max" ] || die "$TREXLAB_ROOT/trexlab/rolevalues.py: no line 'LAB_NAME_MAX = <number>' (the lab name's rule)"
  [[ "$1" =~ ^[a-z0-9]{1,$max}$ ]] || refuse "${2:-LAB_NAME}=$1: allowed 1-$max characters a-z 0-9"
}
check_scale() { [[ -z "$1" || "$1" =~ ^[a-z0-9_-]+$ ]] || refuse "SCALE=$1: a scale is named with a-z 0-9 _ - (e.g. ci)"; }
# RESULTS=: the results root, a directory; never an option (RESULTS=-h reached trexlab's own flags) nor lines.
check_results() {
  [[ -n "$1" && "$1" != -* && "$1" != *[[:cntrl:]]* ]] \
    || refuse "RESULTS=$1: allowed a directory (not one starting with -, no control characters)"
}
# CEILINGS=: the tester ceilings file a self-test rewrites (make demo keeps its short one apart): a .json file below
# the results root $2, where a run writes, and nowhere else: a copied CEILINGS=~/.docker/config.json replaced a
# file trexlab did not make. No '..', no component starting with '.' or '-'.
check_ceilings() {
  local below=${1#"$2"/}
  [[ "$1" == "$2"/* && "$below" =~ ^([A-Za-z0-9_][A-Za-z0-9_.-]*/)*[A-Za-z0-9_][A-Za-z0-9_.-]*\.json$ ]] \
    || refuse "CEILINGS=$1: allowed a .json file below the results root $2/ (default $2/tester-ceilings.json)"
}
need_root() { [ "$(id -u)" -eq 0 ] || die "$1 needs root (network namespaces, nftables): run as root"; }
have() { command -v "$1" >/dev/null 2>&1; }
