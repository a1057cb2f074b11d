#!/usr/bin/env bash
# make setup: everything trexlab needs on this machine; safe to run again.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
# --check-only: what setup refuses (a linked venv it would reinstall, a terraform too old), then stop: make runs it so
# before any recipe, so that a refusal is one line (not the line and make's "*** [...] Error 1") and comes before
# anything is installed; --check-values: nothing (make -n: setup reads no value).
check_only=; case "${1:-}" in --check-only|--check-values) check_only=$1; shift;; esac
[ "$check_only" != --check-values ] || exit 0

# The requirements' hash, kept in the venv once installed from them.
stamp="$VENV/.requirements.sha256"
want=$(sha256sum requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
requirements_differ() { [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; }
# A venv symlinked from another checkout (a git worktree sharing the main checkout's .venv) must not be
# reinstalled from this one: its editable install would then import this checkout's trexlab everywhere else.
if [ -L "$VENV" ] && requirements_differ; then
  die "$VENV links to $(readlink -f "$VENV"), whose requirements differ from this checkout's: run make setup in the checkout it belongs to"
fi
# Terraform: the one on PATH (the registry may be unreachable; see make providers), its version read from its first
# line ("Terraform v1.5.7"), which every version prints (-json came with 0.13); the least one the labs' modules require.
tf_least=$(sed -n 's/^ *required_version = ">= \([0-9]*\.[0-9]*\)"$/\1/p' terraform/labs/local/versions.tf)
[ -n "$tf_least" ] || die "terraform/labs/local/versions.tf: no line 'required_version = \">= <major>.<minor>\"'"
if have terraform; then
  tf_version=$(terraform version 2>/dev/null | sed -n '1s/^Terraform v\([0-9]*\.[0-9][0-9.]*\).*/\1/p')
  [ -n "$tf_version" ] || die "terraform ($(command -v terraform)): its 'terraform version' names no version (Terraform vX.Y.Z): lab-up needs >= $tf_least; install one or take it off PATH"
  [ "$(printf '%s\n' "$tf_least" "$tf_version" | sort -V | head -n 1)" = "$tf_least" ] \
    || die "terraform $tf_version ($(command -v terraform)) is too old: lab-up needs >= $tf_least; install a newer one or take it off PATH"
fi
[ -z "$check_only" ] || exit 0

# Debian packages the local lab and the tests use (only as root on Debian/Ubuntu).
DEB_PACKAGES=(iproute2 pciutils net-tools nftables iptables openssh-server openssh-client tayga iperf3 nginx curl
              netsniff-ng ethtool gcc make python3-venv procps util-linux)
# make lint: ansible-test sanity's shellcheck test of the collection's shell files.
DEB_PACKAGES+=(shellcheck)
# The VM lab (LAB=vm): QEMU, and what builds its guest image from Debian packages (terraform/labs/vm).
DEB_PACKAGES+=(qemu-system-x86 mmdebstrap cpio kmod)
missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && have apt-get; then
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # nginx and sshd must not start system-wide services: the lab starts its own, per namespace.
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    rm -f /usr/sbin/policy-rc.d
  else
    say "cannot install Debian packages (${missing[*]}): not root or no apt-get; install them by hand"
  fi
fi

# Python environment, pinned.
if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  python3 -m venv "$VENV"
fi
if requirements_differ; then  # a linked venv was refused above
  say "installing Python requirements into $VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  # The ansible package is Ansible's bundle of collections: 15,000 of the venv's 23,000 Python files, of which
  # this machine imports almost none (their modules run on the nodes, shipped as source). Byte-compiling them at
  # install doubled the install's time (93 s against 68 s on a fresh clone here, 30 CPU-s); every other package
  # is compiled, as what trexlab, pytest and Ansible import is read from the bytecode (even where
  # PYTHONDONTWRITEBYTECODE keeps Python from writing it later).
  "$VENV/bin/pip" install -q --no-compile --no-deps "$(grep -E '^ansible==' requirements.txt)"
  "$VENV/bin/pip" install -q -r requirements.txt
  "$VENV/bin/pip" install -q --no-deps -e .
  echo "$want" > "$stamp"
fi

have terraform || say "terraform not found on PATH: lab-up needs terraform >= $tf_least"

# Native software tester.
if [ -f swtester/Makefile ]; then
  make -s -C swtester
fi
say "setup done"
