#!/usr/bin/env bash
# make lint: static checks of every language in the tree.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
export PATH="$VENV/bin:$PATH"
# Every cache under .cache or the user's cache, none elsewhere in the checkout: make test runs lint beside tests
# that assert the checkout stays as it was (tests/test_hostile_front_door.py).
export RUFF_CACHE_DIR="$TREXLAB_ROOT/.cache/ruff"
say "ruff"; ruff check --quiet trexlab tests benchmarks analysis ansible_collections terraform trex-profiles
# Type check of the package ([tool.mypy] in pyproject.toml; stubs pinned in requirements.txt). Its cache is the
# user's, shared by the machine's checkouts (one mypy at a time in it): from cold, mypy took 20 CPU-s of every
# fresh clone's make test beside phase 1, with another checkout's cache 3 (it re-checks what differs, by hash).
mypy_cache="${XDG_CACHE_HOME:-$HOME/.cache}/trexlab/mypy"
mkdir -p "$mypy_cache"
say "mypy"; flock "$mypy_cache.lock" mypy --no-error-summary --cache-dir "$mypy_cache"
say "yamllint"; yamllint --strict -c .yamllint.yml .
# galaxy.yml names no repository: trexlab has no public one to name yet.
say "ansible-lint"; ansible-lint --profile production --offline -q --skip-list 'galaxy[no-repository]' \
  playbooks ansible_collections/trexlab/lab
say "ansible-galaxy collection build"; scripts/collection.sh build "$TREXLAB_ROOT/.cache/collection" >/dev/null
say "ansible-test sanity (the trexlab.lab collection, every test)"; scripts/collection.sh sanity
if have terraform; then
  say "terraform fmt"; TF_CLI_CONFIG_FILE=/dev/null terraform fmt -check -recursive terraform
fi
if have terraform; then
  # make test builds the providers' mirror beside lint, holding this lock until it is done (scripts/test.sh).
  [ -z "${TREXLAB_PROVIDERS_LOCK:-}" ] || flock -s "$TREXLAB_PROVIDERS_LOCK" true
  # Validate the root modules that need no provider download, and those that need a provider where the
  # mirror of make providers has it (a user with registry access validates them with plain terraform).
  dirs=(terraform/labs/local terraform/labs/static terraform/labs/vm terraform/modules/inventory terraform/modules/management terraform/modules/topology)
  if [ -f terraform/providers/terraformrc ] && [ -d terraform/providers/mirror ]; then
    dirs+=(terraform/labs/maas)
  else
    say "terraform validate terraform/labs/maas: skipped, its provider is not in terraform/providers/mirror (run make providers)"
  fi
  for dir in "${dirs[@]}"; do
    say "terraform validate $dir"
    rc=/dev/null
    [ "$dir" = terraform/labs/maas ] && rc="$TREXLAB_ROOT/terraform/providers/terraformrc"
    TF_CLI_CONFIG_FILE=$rc TF_DATA_DIR="$TREXLAB_ROOT/.cache/tf-validate/${dir//\//_}" \
      terraform -chdir="$dir" init -backend=false -input=false -no-color >/dev/null
    TF_CLI_CONFIG_FILE=$rc TF_DATA_DIR="$TREXLAB_ROOT/.cache/tf-validate/${dir//\//_}" \
      terraform -chdir="$dir" validate -no-color >/dev/null
  done
fi
