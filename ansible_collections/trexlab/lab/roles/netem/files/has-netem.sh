#!/bin/sh
# Exit 0 when this kernel can build a netem qdisc: loaded, built in, or loadable. Changes nothing.
[ -d /sys/module/sch_netem ] && exit 0
release=$(uname -r)
grep -qs 'sch_netem' "/lib/modules/$release/modules.builtin" && exit 0
modinfo sch_netem >/dev/null 2>&1 && exit 0
exit 1
