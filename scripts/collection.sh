#!/usr/bin/env bash
# The trexlab.lab Ansible collection (ansible_collections/trexlab/lab):
#   scripts/collection.sh build DIR   build its tarball into DIR (ansible-galaxy collection build)
#   scripts/collection.sh sanity      ansible-test sanity on the netconf module, the tests that run offline
# make lint runs both.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
export PATH="$VENV/bin:$PATH"
COLLECTION=ansible_collections/trexlab/lab
# ansible-test's sanity tests that need no package download (the others build a virtual environment per test
# with pip from ci-files.testing.ansible.com and PyPI): the module compiles, its shebang, imports and argument
# types follow the module rules, no asserts, no urlopen, no six, clean file names, line endings and quotes.
# Its DOCUMENTATION, EXAMPLES and RETURN are parsed by ansible-doc and checked against its argument spec in
# tests/test_collection.py (validate-modules' own job, which would download voluptuous).
OFFLINE_TESTS=(action-plugin-docs compile empty-init line-endings no-assert no-get-exception no-illegal-filenames
               no-smart-quotes replace-urlopen shebang symlinks use-argspec-type-path use-compat-six)

case "${1:-}" in
  build)
    [ -n "${2:-}" ] || die "usage: scripts/collection.sh build DIR"
    ansible-galaxy collection build --force --output-path "$2" "$COLLECTION" >/dev/null
    ls "$2"/trexlab-lab-*.tar.gz
    ;;
  sanity)
    # ansible-test runs inside .../ansible_collections/<namespace>/<name> and writes tests/output there: a copy
    # (links resolved: plugin_utils links to the trexlab package's files), and its cache in .cache/, not ~.
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$work/ansible_collections/trexlab"
    cp -rL "$COLLECTION" "$work/ansible_collections/trexlab/lab"
    python=$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    tests=()
    for t in "${OFFLINE_TESTS[@]}"; do tests+=(--test "$t"); done
    (cd "$work/ansible_collections/trexlab/lab" &&
      HOME="$TREXLAB_ROOT/.cache/ansible-test-home" LC_ALL=C.UTF-8 \
        ansible-test sanity --color no --python "$python" "${tests[@]}" plugins/modules/netconf.py) \
      | { grep -v '^Running sanity test\|locale\|^WARNING: Reviewing' || true; }
    ;;
  *) die "usage: scripts/collection.sh build DIR | sanity" ;;
esac
