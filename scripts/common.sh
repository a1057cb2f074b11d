# Shared shell helpers for scripts/*.sh (sourced, not run).
# shellcheck shell=bash
TREXLAB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-$TREXLAB_ROOT/.venv}

say()  { printf '%s\n' "trexlab: $*"; }
die()  { printf '%s\n' "trexlab: error: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" -eq 0 ] || die "$1 needs root (network namespaces, nftables): run as root"; }
have() { command -v "$1" >/dev/null 2>&1; }
