#!/bin/sh
# running.sh MARK PIDFILE...: print each PIDFILE whose process is NOT running. A process counts only when it is
# alive and its command line contains MARK (the role's state directory), so a stale PID file, or a PID number
# reused by another process, never passes for one of our servers.
# Then "undeclared <file>" for each iperf3 PID file in MARK that is not among the PIDFILEs: a server of a port an
# earlier run declared and this one does not (the role stops it).
mark=$1
shift
for pidfile in "$@"; do
  pid=$(cat "$pidfile" 2>/dev/null)
  case "$pid" in ''|*[!0-9]*) echo "$pidfile"; continue;; esac
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$mark" || echo "$pidfile"
done
for pidfile in "$mark"/iperf3-*.pid; do
  [ -e "$pidfile" ] || continue
  declared=no
  for wanted in "$@"; do [ "$wanted" = "$pidfile" ] && declared=yes; done
  [ $declared = yes ] || echo "undeclared $pidfile"
done
