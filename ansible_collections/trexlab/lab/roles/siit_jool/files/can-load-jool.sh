#!/bin/sh
# What this host offers for Jool's SIIT, and what of it is in place; changes nothing.
#   can-load-jool.sh [instance [record file]]
# Prints one JSON line and exits 0:
#   {"jool": "ready" | "install", "loaded": true|false, "instance": true|false, "record": <record file> | null}
#   ready    jool_siit is loaded or installed for the running kernel, and the jool_siit tool is there
#            (a prebuilt image such as the VM lab's guest, or an earlier run of the role)
#   install  the kernel loads modules but Jool is missing: the role installs jool-dkms and jool-tools
# Exits 1, saying why, when the kernel cannot load modules at all.
if [ ! -e /proc/modules ] && [ ! -d /sys/module/jool_siit ]; then
  echo "this kernel cannot load modules (no /proc/modules), so not Jool's jool_siit"
  exit 1
fi
jool=install
if { [ -d /sys/module/jool_siit ] || modinfo jool_siit >/dev/null 2>&1; } && command -v jool_siit >/dev/null; then
  jool=ready
fi
loaded=false
[ -d /sys/module/jool_siit ] && loaded=true
instance=false
[ $loaded = true ] && [ -n "${1:-}" ] && jool_siit -i "$1" eamt display --csv >/dev/null 2>&1 && instance=true
record=null
[ -n "${2:-}" ] && [ -s "$2" ] && record=$(cat "$2")
printf '{"jool": "%s", "loaded": %s, "instance": %s, "record": %s}\n' "$jool" "$loaded" "$instance" "$record"
