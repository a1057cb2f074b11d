#!/usr/bin/env bash
# make lint: static checks of every language in the tree.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
export PATH="$VENV/bin:$PATH"
say "ruff"; ruff check --quiet trexlab tests benchmarks analysis
say "yamllint"; yamllint --strict -c .yamllint.yml .
if compgen -G "roles/*/tasks/main.yml" >/dev/null; then
  say "ansible-lint"; ANSIBLE_ROLES_PATH=roles ansible-lint --profile production --offline -q playbooks roles
fi
if have terraform; then
  say "terraform fmt"; terraform fmt -check -recursive terraform
fi
