#!/usr/bin/env bash
# make setup: everything trexlab needs on this machine; safe to run again.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"

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
stamp="$VENV/.requirements.sha256"
want=$(sha256sum requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  # A venv symlinked from another checkout (a git worktree sharing the main checkout's .venv) must not be
  # reinstalled from this one: its editable install would then import this checkout's trexlab everywhere else.
  [ ! -L "$VENV" ] || die "$VENV links to $(readlink -f "$VENV"), whose requirements differ from this checkout's: run make setup in the checkout it belongs to"
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

# Terraform: the one on PATH (the registry may be unreachable; see make providers).
if have terraform; then
  ver=$(terraform version -json 2>/dev/null | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["terraform_version"])')
  "$VENV/bin/python" - "$ver" <<'PY' || die "terraform $ver is too old: need >= 1.6"
import sys
major, minor = (int(x) for x in sys.argv[1].split(".")[:2])
sys.exit(0 if (major, minor) >= (1, 6) else 1)
PY
else
  say "terraform not found on PATH: lab-up needs terraform >= 1.6"
fi

# Native software tester.
if [ -f swtester/Makefile ]; then
  make -s -C swtester
fi
say "setup done"
