#!/bin/sh
# stop.sh MARK PIDFILE...: end each process named by a PIDFILE whose command line contains MARK (the role's
# state directory): TERM to all of them at once, KILL to what is left after 3 s. Prints each PIDFILE whose
# process was stopped, and removes every PIDFILE.
mark=$1
shift
pids=""
for pidfile in "$@"; do
  pid=$(cat "$pidfile" 2>/dev/null)
  rm -f "$pidfile"
  case "$pid" in ''|*[!0-9]*) continue;; esac
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$mark" || continue
  kill -TERM "$pid" 2>/dev/null && pids="$pids $pid" && echo "$pidfile"
done
for _ in $(seq 30); do
  alive=""
  for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive="$alive $pid"; done
  [ -z "$alive" ] && exit 0
  sleep 0.1
done
for pid in $alive; do kill -KILL "$pid" 2>/dev/null; done
exit 0
