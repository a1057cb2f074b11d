#!/usr/bin/env bash
# terraform validate of every lab and shared module (part of make lint), run on a copy of their sources under
# .cache: terraform init writes a module's dependency lock file (.terraform.lock.hcl) beside its .tf files when
# it installs a provider (the MAAS lab's), and make test runs lint beside tests that assert the checkout stays
# as it was (tests/test_hostile_front_door.py). The lock file a lab-up of the MAAS lab writes there is the
# machine's own (terraform/providers/README.md); lint neither writes nor reads it.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"
have terraform || { say "terraform validate: skipped, terraform not found"; exit 0; }
# make test builds the providers' mirror beside lint, holding this lock until it is done (scripts/test.sh).
[ -z "${TREXLAB_PROVIDERS_LOCK:-}" ] || flock -s "$TREXLAB_PROVIDERS_LOCK" true
# Validate the root modules that need no provider download, and those that need a provider where the
# mirror of make providers has it (a user with registry access validates them with plain terraform).
dirs=(labs/local labs/static labs/vm modules/inventory modules/management modules/realiser modules/topology)
if [ -f terraform/providers/terraformrc ] && [ -d terraform/providers/mirror ]; then
  dirs+=(labs/maas)
else
  say "terraform validate terraform/labs/maas: skipped, its provider is not in terraform/providers/mirror (run make providers)"
fi
work="$TREXLAB_ROOT/.cache/tf-validate"
copy="$work/sources"
rm -rf "$copy"
mkdir -p "$copy"
# The sources only: no data directory, state or lock file a lab-up left in the checkout.
tar -C terraform --exclude=.terraform --exclude=.cache --exclude='terraform.tfstate*' \
  --exclude='.terraform.lock.hcl*' -cf - labs modules | tar -C "$copy" -xf -
for dir in "${dirs[@]}"; do
  say "terraform validate terraform/$dir"
  rc=/dev/null
  [ "$dir" = labs/maas ] && rc="$TREXLAB_ROOT/terraform/providers/terraformrc"
  TF_CLI_CONFIG_FILE=$rc TF_DATA_DIR="$work/${dir//\//_}" \
    terraform -chdir="$copy/$dir" init -backend=false -input=false -no-color >/dev/null
  TF_CLI_CONFIG_FILE=$rc TF_DATA_DIR="$work/${dir//\//_}" \
    terraform -chdir="$copy/$dir" validate -no-color >/dev/null
done
