#!/usr/bin/env bash
# make providers: Terraform providers built from the Go module proxy into a repo-local filesystem mirror,
# for machines that reach the Go module proxy but not the Terraform registry. With registry access, skip it.
#   terraform/providers/providers.txt   what to build (address, version, Go module)
#   terraform/providers/mirror/         the mirror (not committed; unpacked layout)
#   terraform/providers/terraformrc     the CLI config using it (written here, absolute path, not committed);
#                                       scripts/lab.sh, lint.sh and the tests set TF_CLI_CONFIG_FILE to it
# Idempotent: a provider already in the mirror is not rebuilt, so a second run takes well under a second.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$TREXLAB_ROOT"

# --check-only: that Go is found, then stop (make runs it so before any recipe: a refusal is one line);
# --check-values: nothing to check (make -n, whose answer must not depend on the machine's state).
[ "${1:-}" != --check-values ] || exit 0
have go || die "go not found: make providers builds the providers with Go (https://go.dev/dl, or apt install golang)"
[ "${1:-}" != --check-only ] || exit 0
mirror="$TREXLAB_ROOT/terraform/providers/mirror"
os_arch="$(go env GOOS)_$(go env GOARCH)"
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

while read -r address version module; do
  case "$address" in ''|'#'*) continue;; esac
  type=${address##*/}
  dest="$mirror/$address/$version/$os_arch"
  binary="$dest/terraform-provider-${type}_v$version"
  if [ -x "$binary" ]; then
    say "$address $version: already in the mirror"
    continue
  fi
  say "$address $version: building $module@v$version from the Go module proxy (about a minute on a cold Go cache)"
  start=$SECONDS
  # Download, then build in a writable copy: `go install module@version` refuses modules whose go.mod
  # names them differently from their path (canonical/maas 1.3.1 calls itself terraform-provider-maas).
  info=$(go mod download -json "$module@v$version" 2>&1 </dev/null) \
    || die "$module@v$version could not be downloaded: $(sed -n 's/^\s*"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$info" | head -n 1)"
  dir=$(sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p' <<<"$info")
  [ -d "$dir" ] || die "$module@v$version: go mod download named no module directory"
  cp -r "$dir" "$work/$type" && chmod -R u+w "$work/$type"
  (cd "$work/$type" && GOFLAGS="-mod=mod -buildvcs=false" go build -trimpath -ldflags="-s -w" -o "$work/$type.bin" . </dev/null) \
    || die "$module@v$version did not build (see the Go errors above)"
  mkdir -p "$dest"
  # Into place only once complete: an interrupted build never leaves a binary that looks finished.
  install -m 0755 "$work/$type.bin" "$binary.tmp" && mv "$binary.tmp" "$binary"
  say "$address $version: built in $((SECONDS - start)) s -> ${binary#"$TREXLAB_ROOT"/}"
done < terraform/providers/providers.txt

# Absolute paths: Terraform reads the CLI config before -chdir, and this file is per checkout anyway.
# No direct block: with this config nothing is fetched from the registry, so a provider missing from the
# mirror fails at init instead of hanging on an unreachable registry.
cat > terraform/providers/terraformrc.tmp <<RC
# Written by scripts/providers.sh: providers in terraform/providers/providers.txt come from the repo-local mirror.
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["registry.terraform.io/*/*"]
  }
}
RC
mv terraform/providers/terraformrc.tmp terraform/providers/terraformrc
say "CLI config: terraform/providers/terraformrc (used wherever the mirror exists)"
