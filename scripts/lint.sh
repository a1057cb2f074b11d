#!/usr/bin/env bash
# make lint: static checks of every language in the tree.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
export PATH="$VENV/bin:$PATH"
say "ruff"; ruff check --quiet trexlab tests benchmarks analysis library filter_plugins terraform
say "yamllint"; yamllint --strict -c .yamllint.yml .
if compgen -G "roles/*/tasks/main.yml" >/dev/null; then
  say "ansible-lint"; ANSIBLE_ROLES_PATH=roles ansible-lint --profile production --offline -q playbooks roles
fi
if have terraform; then
  say "terraform fmt"; TF_CLI_CONFIG_FILE=/dev/null terraform fmt -check -recursive terraform
fi
if have terraform; then
  # Validate the root modules that need no provider download (the others: tests/terraform, after make providers).
  for dir in terraform/labs/local terraform/modules/inventory; do
    say "terraform validate $dir"
    TF_CLI_CONFIG_FILE=/dev/null TF_DATA_DIR="$TREXLAB_ROOT/.cache/tf-validate/${dir//\//_}" \
      terraform -chdir="$dir" init -backend=false -input=false -no-color >/dev/null
    TF_CLI_CONFIG_FILE=/dev/null TF_DATA_DIR="$TREXLAB_ROOT/.cache/tf-validate/${dir//\//_}" \
      terraform -chdir="$dir" validate -no-color >/dev/null
  done
fi
