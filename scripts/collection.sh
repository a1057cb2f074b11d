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
    # environment per sanity test (pylint, validate-modules, ... from PyPI, pinned by ansible-test), is under
    # .cache/ per ansible-core version: the first run installs them (~1.5 min), later runs reuse them.
    core=$(python -c 'import ansible; print(ansible.__version__)')
    python=$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    home="$TREXLAB_ROOT/.cache/ansible-test/core-$core"
    for old in "$TREXLAB_ROOT"/.cache/ansible-test/core-*; do
      [ "$old" = "$home" ] || rm -rf "$old"  # environments of an ansible-core no longer pinned
    done
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
    # shellcheck (the roles' files/*.sh) is a Debian package that make setup installs; ansible-test would
    # otherwise pass over it with a warning only. pslint has no PowerShell file to check here.
    skip=()
    if ! have shellcheck; then
      say "ansible-test sanity: shellcheck skipped, it is not installed (make setup installs it)"
      skip=(--skip-test shellcheck)
    fi
    [ -d "$home/.ansible/test/venv" ] ||
      say "ansible-test sanity: installing its test environments into ${home#"$TREXLAB_ROOT"/} (first run)"
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
