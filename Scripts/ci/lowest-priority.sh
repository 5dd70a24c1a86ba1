#!/usr/bin/env bash
# Runs COMMAND... so that it takes only the CPU nothing else wants: CI's
# background builds beside its foreground steps (.ci/run).
#
# `nice` alone does not do it: SwiftPM's build system starts every compiler
# process at the default priority whatever its own, so a `nice -n 19 swift
# build` still competed half and half with the steps in front. A CPU
# control group holds every process started inside it, whatever it sets:
# with cgroup v2, `cpu.idle` (SCHED_IDLE for the group) or the lowest
# `cpu.weight`; with v1, the lowest `cpu.shares`. Without a writable CPU
# controller (not root, say), every process of the command's process group
# is reniced to 19 once a second instead.
set -euo pipefail

group=""
for root in /sys/fs/cgroup/cpu /sys/fs/cgroup; do
    [ -w "$root" ] || continue
    candidate="$root/outbox-ci-background-$$"
    mkdir "$candidate" 2>/dev/null || continue
    if [ -f "$candidate/cpu.idle" ] && echo 1 >"$candidate/cpu.idle" 2>/dev/null; then
        group=$candidate
    elif [ -f "$candidate/cpu.weight" ] && echo 1 >"$candidate/cpu.weight" 2>/dev/null; then
        group=$candidate
    elif [ -f "$candidate/cpu.shares" ] && echo 2 >"$candidate/cpu.shares" 2>/dev/null; then
        group=$candidate
    else
        rmdir "$candidate" 2>/dev/null || true
        continue
    fi
    break
done

if [ -n "$group" ] && echo $$ >"$group/cgroup.procs" 2>/dev/null; then
    echo "lowest-priority: in CPU control group $group"
    status=0
    nice -n 19 "$@" || status=$?
    # Out of the group, so that it can be removed.
    echo $$ >"$(dirname "$group")/cgroup.procs" 2>/dev/null || true
    rmdir "$group" 2>/dev/null || true
    exit $status
fi
[ -z "$group" ] || rmdir "$group" 2>/dev/null || true

echo "lowest-priority: no writable CPU control group; renicing the command's processes once a second"
set -m
nice -n 19 "$@" &
command_pid=$!
set +m
while kill -0 "$command_pid" 2>/dev/null; do
    for pid in $(pgrep -g "$command_pid" 2>/dev/null || true); do renice -n 19 -p "$pid" >/dev/null 2>&1 || true; done
    sleep 1
done
wait "$command_pid"
