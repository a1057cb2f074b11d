#!/bin/sh
# Exit 0 when this kernel can build a netem qdisc: loaded, built in, or loadable. Changes nothing.
# With an argument (roles/netem), first print that file, the role's record of what it applied, where it exists:
# one remote call for both questions, as each costs seconds on an emulated DUT (the VM lab).
if [ -n "${1:-}" ] && [ -f "$1" ]; then cat "$1"; fi
[ -d /sys/module/sch_netem ] && exit 0
release=$(uname -r)
grep -qs 'sch_netem' "/lib/modules/$release/modules.builtin" && exit 0
modinfo sch_netem >/dev/null 2>&1 && exit 0
exit 1
