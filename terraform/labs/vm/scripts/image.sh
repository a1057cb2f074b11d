#!/usr/bin/env bash
# The VM lab's guest image, built from Debian packages into a cache and reused while its ingredients stay
# the same:
#
#   image.sh <cache dir>    progress on stderr; prints the image directory on stdout:
#                           vmlinux (uncompressed kernel, booted through its PVH entry: no decompression
#                           under TCG), initrd.cpio (the whole root file system), manifest.json
#
# The key of an image is what goes into it: the kernel package apt would install now (the dependency of
# linux-image-amd64, so a Debian point release with a new kernel ABI gives a new image), Jool's version,
# the package and module lists, the guest's files and this script. Jool's kernel module is built here on
# the host from jool-dkms's source against the headers of exactly that kernel, extracted beside it (nothing
# is installed on the host). Only the modules a DUT needs (and their dependencies) go into the image.
set -euo pipefail
say() { printf 'trexlab: VM image: %s\n' "$*" >&2; }
die() { printf 'trexlab: error: VM image: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: image.sh <cache dir>"
CACHE=$(realpath -m "$1")  # absolute: the headers are built from inside the sysroot
HERE=$(cd "$(dirname "$0")" && pwd)
GUEST="$HERE/../guest"

# What a DUT runs besides Debian's essential set: Ansible's Python and SSH, the tools of the DUT roles.
PACKAGES=(mount python3 openssh-server iproute2 nftables iptables ethtool kmod procps tini iputils-ping)
# Kernel modules of the guest (dependencies follow): virtio NICs, netem/htb/fw and nftables/iptables for
# roles/netem, Jool's SIIT for roles/siit_jool.
MODULES=(virtio_pci virtio_net virtio_rng sch_netem sch_htb sch_tbf cls_fw cls_u32 nf_tables nft_numgen nft_ct
         nft_compat nft_limit ip_tables ip6_tables iptable_filter iptable_mangle ip6table_filter ip6table_mangle
         xt_statistic xt_mark jool_siit)

for tool in apt-get apt-cache dpkg-deb mmdebstrap depmod modprobe cpio make gcc strip python3; do
  command -v "$tool" >/dev/null || die "$tool not found: run 'make setup' (it installs the VM lab's packages)"
done

field() { apt-cache show --no-all-versions "$1" 2>/dev/null | sed -n "s/^$2: //p" | head -n 1; }
if [ -z "$(field linux-image-amd64 Version)" ]; then
  say "apt knows no linux-image-amd64 yet: apt-get update"
  apt-get update -qq || true
fi
kernel_version=$(field linux-image-amd64 Version)
[ -n "$kernel_version" ] || die "apt has no candidate for linux-image-amd64: the guest needs Debian's apt sources"
kernel_package=$(field linux-image-amd64 Depends | grep -o 'linux-image-[^ ,]*' | head -n 1)
release=${kernel_package#linux-image-}             # e.g. 6.1.0-56-amd64, what uname -r says in the guest
headers_package=linux-headers-$release
headers_deps=$(field "$headers_package" Depends | grep -oE 'linux-(headers-[^ ,]*-common|kbuild-[^ ,]*)' | sort -u)
jool_version=$(field jool-dkms Version)
[ -n "$jool_version" ] || die "apt has no candidate for jool-dkms"
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$suite" ] || die "/etc/os-release names no VERSION_CODENAME: the guest follows the host's Debian release"
# The host's own Debian sources, so that the guest's user space and the kernel come from the same release.
sources=()
for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
  [ -s "$f" ] && sources=("$f") && break
done

recipe=$(
  printf 'suite %s\nkernel %s=%s\njool %s\npackages %s\nmodules %s\n' "$suite" "$kernel_package" \
    "$kernel_version" "$jool_version" "${PACKAGES[*]}" "${MODULES[*]}"
  sha256sum "$0" "$GUEST"/* | cut -d' ' -f1
)
key=$(sha256sum <<<"$recipe" | cut -c1-16)
IMAGES="$CACHE/images"
image="$IMAGES/$key"
if [ -f "$image/manifest.json" ]; then
  say "$release, Jool $jool_version: cached ($image)"
  echo "$image"
  exit 0
fi

mkdir -p "$IMAGES"
exec 9>"$IMAGES/.lock"
flock 9  # one build at a time; a second lab-up waits and then finds the image
if [ -f "$image/manifest.json" ]; then
  echo "$image"
  exit 0
fi

start=$SECONDS
work="$IMAGES/.build-$key"
rm -rf "$work"
mkdir -p "$work/debs" "$work/sysroot"
trap 'rm -rf "$work"' EXIT

say "building for kernel $release ($kernel_version) with Jool $jool_version (about a minute, once)"
say "downloading the kernel, its headers and Jool"
# shellcheck disable=SC2086
(cd "$work/debs" && apt-get download -qq "$kernel_package=$kernel_version" "$headers_package=$kernel_version" \
   $headers_deps "jool-dkms=$jool_version" "jool-tools=$jool_version" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
for pkg in "$kernel_package" "$headers_package" jool-dkms jool-tools; do
  compgen -G "$work/debs/${pkg}_*.deb" >/dev/null || die "apt-get download did not fetch $pkg"
done
for deb in "$work/debs"/*.deb; do
  case "$deb" in */jool-tools_*) ;; *) dpkg-deb -x "$deb" "$work/sysroot";; esac
done
sysroot="$work/sysroot"
modules="$sysroot/lib/modules/$release"

say "extracting the uncompressed kernel from the bzImage"
python3 - "$sysroot/boot/vmlinuz-$release" "$work/vmlinux" <<'PY'
import lzma, sys, zlib
data = open(sys.argv[1], "rb").read()
# The bzImage carries the kernel as one compressed stream after its setup code: find it and inflate it.
for magic, inflate in ((b"\xfd7zXZ\x00", lambda b: lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(b)),
                       (b"\x1f\x8b\x08", lambda b: zlib.decompressobj(31).decompress(b))):
    at = data.find(magic)
    while at >= 0:
        try:
            kernel = inflate(data[at:])
        except (lzma.LZMAError, zlib.error):
            kernel = b""
        if kernel[:4] == b"\x7fELF":
            open(sys.argv[2], "wb").write(kernel)
            sys.exit(0)
        at = data.find(magic, at + 1)
sys.exit(f"{sys.argv[1]}: no xz or gzip compressed ELF kernel inside")
PY

say "building Jool's kernel modules against linux-headers-$release"
headers="$sysroot/usr/src/linux-headers-$release"
# The headers' Makefile includes the -common tree by its absolute /usr/src path: point it into the sysroot.
sed -i "s|^include /usr/src/|include $sysroot/usr/src/|" "$headers/Makefile"
jool_src=$(find "$sysroot/usr/src" -maxdepth 1 -name 'jool*' | head -n 1)
[ -d "$jool_src/src/mod/siit" ] || die "jool-dkms $jool_version: no src/mod/siit under /usr/src"
mkdir -p "$modules/extra"
for mod in common siit; do
  make -s -C "$headers" M="$jool_src/src/mod/$mod" -j"$(nproc)" modules >"$work/jool-$mod.log" 2>&1 \
    || { tail -n 20 "$work/jool-$mod.log" >&2; die "Jool's $mod module did not build against $release"; }
done
strip --strip-debug -o "$modules/extra/jool_common.ko" "$jool_src/src/mod/common/jool_common.ko"
strip --strip-debug -o "$modules/extra/jool_siit.ko" "$jool_src/src/mod/siit/jool_siit.ko"
depmod -b "$sysroot" "$release"
needed=$(for m in "${MODULES[@]}"; do
           modprobe -d "$sysroot" -S "$release" --show-depends "$m" || die "kernel $release has no module $m"
         done | awk '$1 == "insmod" {print $2}' | sort -u)

say "root file system (mmdebstrap $suite, ${#PACKAGES[@]} packages and Jool's tools)"
timeout 900 mmdebstrap --variant=essential --mode=root --format=directory --quiet \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --include="$(IFS=,; echo "${PACKAGES[*]}"),$(echo "$work"/debs/jool-tools_*.deb)" \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  "$suite" "$work/rootfs" "${sources[@]}" >"$work/mmdebstrap.log" 2>&1 \
  || { tail -n 20 "$work/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
rootfs="$work/rootfs"
for ko in $needed; do
  rel=${ko#"$sysroot"/}
  mkdir -p "$rootfs/$(dirname "$rel")"
  cp "$ko" "$rootfs/$rel"
done
cp "$modules"/modules.builtin* "$modules/modules.order" "$rootfs/lib/modules/$release/"
depmod -b "$rootfs" "$release"
install -m 0755 "$GUEST/init" "$rootfs/init"
# Ansible's modules arrive as zips compiled anew every task, a second each under emulation: keep the code.
install -m 0644 "$GUEST/trexlab_zipcache.py" "$rootfs/usr/lib/python3/dist-packages/"
echo "import trexlab_zipcache" >"$rootfs/usr/lib/python3/dist-packages/trexlab-zipcache.pth"
# One host key is enough (the lab's known_hosts records it at first contact); sshd without PAM starts faster.
rm -f "$rootfs"/etc/ssh/ssh_host_rsa_key* "$rootfs"/etc/ssh/ssh_host_ecdsa_key*
printf 'UsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUseDNS no\nPrintMotd no\n' \
  >"$rootfs/etc/ssh/sshd_config.d/trexlab.conf"
(cd "$rootfs" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) >"$work/initrd.cpio"

python3 - "$work/manifest.json" <<PY
import json, sys
json.dump({"key": "$key", "suite": "$suite", "kernel_release": "$release", "kernel_package": "$kernel_package",
           "kernel_version": "$kernel_version", "jool_version": "$jool_version",
           "packages": "${PACKAGES[*]}".split(), "modules": "${MODULES[*]}".split(),
           "build_seconds": $((SECONDS - start))}, open(sys.argv[1], "w"), indent=2)
PY
mkdir -p "$image.tmp"
mv "$work/vmlinux" "$work/initrd.cpio" "$work/manifest.json" "$image.tmp/"
mv "$image.tmp" "$image"
# Images of earlier ingredients are of no further use (a running lab keeps its open files).
for old in "$IMAGES"/*; do
  [ "$old" = "$image" ] || rm -rf "$old"
done
say "built in $((SECONDS - start)) s: $image ($(du -sh "$image/initrd.cpio" | cut -f1) root file system)"
echo "$image"
