#!/usr/bin/env bash
# The trexlab.lab Ansible collection (ansible_collections/trexlab/lab):
#   scripts/collection.sh build DIR   build its tarball into DIR (ansible-galaxy collection build)
#   scripts/collection.sh sanity      ansible-test sanity on the whole collection, every test it has
# make lint runs both.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
export PATH="$VENV/bin:$PATH"
COLLECTION=ansible_collections/trexlab/lab

case "${1:-}" in
  build)
    [ -n "${2:-}" ] || die "usage: scripts/collection.sh build DIR"
    ansible-galaxy collection build --force --output-path "$2" "$COLLECTION" >/dev/null
    ls "$2"/trexlab-lab-*.tar.gz
    ;;
  sanity)
    # ansible-test runs inside .../ansible_collections/<namespace>/<name> and writes tests/output there: a copy
    # (links resolved: plugin_utils links to the trexlab package's files). Its home, where it keeps one virtual
    # environment per sanity test (pylint, validate-modules, ... from PyPI, pinned by ansible-test and named by a
    # hash of what they install, made from the base Python, not this checkout's venv), is in the user's cache per
    # ansible-core version, shared by every checkout on the machine: the first run there installs them (2.5 min
    # and 125 CPU-s alone on a 2-vCPU machine; under each checkout's .cache/, every fresh clone's make test paid
    # that beside its tests), later runs and clones reuse them (~20 s). Environments of another ansible-core stay:
    # another checkout may pin it.
    core=$(python -c 'import ansible; print(ansible.__version__)')
    python=$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    cache="${TREXLAB_ANSIBLE_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trexlab/ansible-test}"
    home="$cache/core-$core"
    rm -rf "$TREXLAB_ROOT/.cache/ansible-test"  # where this checkout kept them before
    mkdir -p "$home"
    # One sanity run at a time in that home: two checkouts' lints creating one environment at once would each
    # install into it.
    exec 9>"$home.lock"
    flock 9
    # The pip that ansible-test puts into each environment comes with a get-pip.py from its own file server
    # (not a package registry): scripts/ansible_test_get_pip.py does the same from PyPI, where it looks.
    pip_version=$(python -c 'import types; from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="'"$python"'"))["pip"])') ||
      die "ansible-test $core: cannot read the pip version it bootstraps (its internals changed)"
    mkdir -p "$home/.ansible/test/cache"
    cp scripts/ansible_test_get_pip.py "$home/.ansible/test/cache/get_pip_${pip_version//./_}.py"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$work/ansible_collections/trexlab"
    cp -rL "$COLLECTION" "$work/ansible_collections/trexlab/lab"
    # The roles' files/*.sh are checked by the shellcheck program, a Debian package that make setup installs;
    # without it ansible-test would pass over them with a warning only. pslint has no PowerShell file to check here.
    # (A comment line may not start with that program's name: shellcheck reads it as a directive and checked
    # nothing of this file.)
    skip=()
    if ! have shellcheck; then
      say "ansible-test sanity: shellcheck skipped, it is not installed (make setup installs it)"
      skip=(--skip-test shellcheck)
    fi
    [ -d "$home/.ansible/test/venv" ] ||
      say "ansible-test sanity: installing its test environments into $home (first run on this machine)"
    # Its output (pip's installs, a warning about a locale other than en_US.UTF-8) is shown when it fails.
    log="$work/sanity.log"
    if ! (cd "$work/ansible_collections/trexlab/lab" &&
          HOME="$home" LC_ALL=C.UTF-8 ansible-test sanity --color no --requirements --python "$python" "${skip[@]}") \
          >"$log" 2>&1; then
      grep -v '^Collecting\|^  \|^Installing collected\|^Successfully installed\|^Using cached pip' "$log" >&2
      die "ansible-test sanity on the trexlab.lab collection failed (above)"
    fi
    ;;
  *) die "usage: scripts/collection.sh build DIR | sanity" ;;
esac
