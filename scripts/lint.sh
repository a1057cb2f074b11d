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
scripts/tf-validate.sh
