#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# kernel_run.sh LIMIT_MB CMD...: run CMD under kernel swap for comparison
# with `uswap run --memory LIMIT_MB`: a zram device of its own (lz4, 4 GiB,
# the highest priority) and a cgroup v1 memory cgroup limited to LIMIT_MB,
# swappiness 60, both removed afterwards (root). Prints CMD's output, then
# one line: exit status (of CMD, or of a pipeline's last command), seconds,
# the cgroup's peak, its OOM kills and major faults. The cgroup's limit
# counts all it charges (the page cache of the files read, page tables,
# kernel memory), --memory only the registered anonymous pages: at the same
# figure the kernel's program has less room.
set -u
lim=$1; shift
cg=/sys/fs/cgroup/memory/uswap-krun-$$
zdev=$(cat /sys/class/zram-control/hot_add)
cleanup() {
	while [ -s "$cg/cgroup.procs" ]; do xargs -r kill -9 <"$cg/cgroup.procs" 2>/dev/null; sleep 0.1; done
	rmdir "$cg" 2>/dev/null
	swapoff "/dev/zram$zdev" 2>/dev/null
	echo 1 >"/sys/block/zram$zdev/reset"
	echo "$zdev" >/sys/class/zram-control/hot_remove
}
trap cleanup EXIT
mkdir "$cg"
echo lz4 >"/sys/block/zram$zdev/comp_algorithm"
echo 4G >"/sys/block/zram$zdev/disksize"
mkswap "/dev/zram$zdev" >/dev/null
swapon -p 32767 "/dev/zram$zdev"
echo 60 >"$cg/memory.swappiness"
echo $((lim << 20)) >"$cg/memory.limit_in_bytes"
s=$(date +%s.%N)
sh -c 'echo $$ >"$0/cgroup.procs"; exec "$@"' "$cg" "$@"
rc=$?
e=$(date +%s.%N)
echo "kernel: exit $rc, $(echo "$e - $s" | bc) s, peak $(( $(cat "$cg/memory.max_usage_in_bytes") >> 20 )) MiB," \
	"oom_kill $(awk '/^oom_kill / {print $2}' "$cg/memory.oom_control")," \
	"major faults $(awk '/^total_pgmajfault / {print $2}' "$cg/memory.stat")"
