#!/usr/bin/env bash
# uswap run on our own test program (rt_prog check) under a budget a third
# of its size: 0 wrong words, every device empty at the end, and the
# program's resident anonymous memory (sampled from smaps_rollup: Anonymous
# until it forks, then the tree's Pss_Anon, parent + child, in which a page
# they share counts once) within the budget plus the stated overhead. The
# fork is followed by a fork event with pages swapped out at that moment:
# the child's mirror shares their swap entries (counts 2, fork_swap_dups).
# usage: run_check.sh USWAP RT_PROG table|legacy
set -uo pipefail
. "$(dirname "$0")/lib.sh"
uswap=$1 prog=$2 design=${3:-table}
budget_mb=4 data_mb=12
# The sanitizer and count-width passes of CI set USWAP_TEST_OPS: half the size.
if [ -n "${USWAP_TEST_OPS:-}" ]; then
	budget_mb=2 data_mb=6
fi
# Overhead: the fault slack (1 MiB), a malloc'd 4 MiB buffer glibc maps
# itself (registered by the agent's next rescan, up to 10 ms after it is
# filled), the shim's stacks and staging area, libc's own memory.
overhead_mb=6
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$uswap" run --memory ${budget_mb}M --design "$design" --json "$dir/json" --stats \
	-- "$prog" check $data_mb >"$dir/out" 2>"$dir/err" &
sup=$!
wait_child $sup rt_prog
max=0 max_tree=0
# After the fork, the tree's: the sum of Pss_Anon over the parent
# and its child (a page they share counts once), within the same limit.
pss() {
	local k v _ a=0
	while read -r k v _; do
		[ "$k" = Pss_Anon: ] && a=$v
	done 2>/dev/null </proc/$1/smaps_rollup
	echo $a
}
# Sampled with builtins only (no process per sample on a loaded machine).
while [ -n "$pid" ] && [ -r /proc/$pid/smaps_rollup ]; do
	out=$(<"$dir/out")
	if [[ $out == *forking* ]]; then
		kids=
		[ -r /proc/$pid/task/$pid/children ] && read -r kids </proc/$pid/task/$pid/children
		a=$(pss $pid)
		for k in $kids; do a=$((a + $(pss $k))); done
		((a > max_tree)) && max_tree=$a
		sleep 0.01
		continue
	fi
	a=0
	while read -r k v _; do
		[ "$k" = Anonymous: ] && a=$v
	done </proc/$pid/smaps_rollup 2>/dev/null
	((a > max)) && max=$a
	sleep 0.01
done
wait $sup
rc=$?
fail=0
check_run $rc "$dir"
python3 - "$dir/json" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
if j["evicted"] < 500 or j["swapins"] < 100:
    print("FAIL: too little swapping to mean anything:", j); sys.exit(1)
if j["fork_events"] < 1 or j["fork_swapped"] < 100 or j["fork_swap_dups"] < 1:
    print("FAIL: the fork was not followed with pages swapped out (fork_events %d, "
          "fork_swapped %d, fork_swap_dups %d)" % (j["fork_events"], j["fork_swapped"],
                                                   j["fork_swap_dups"])); sys.exit(1)
print("evicted %d, swap-ins %d, devices empty; fork: %d pages out of the parent, %d swap "
      "entries shared with the child (count 2)" % (j["evicted"], j["swapins"], j["fork_swapped"],
                                                  j["fork_swap_dups"]))
PY
limit=$(( (budget_mb + overhead_mb) * 1024 ))
echo "resident anonymous memory: max ${max} KiB sampled, limit ${limit} KiB (budget ${budget_mb} MiB + ${overhead_mb} MiB)"
# On a loaded machine the first sample may come after the fork: the tree's
# samples then hold the same limit; a run with no sample at all fails.
[ "$max" -gt 0 ] || echo "note: no sample before the fork"
[ "$max" -gt 0 ] || [ "$max_tree" -gt 0 ] || { echo "FAIL: no sample of the program's memory"; fail=1; }
[ "$max" -le "$limit" ] || { echo "FAIL: over the budget"; fail=1; }
echo "the tree after the fork (Pss_Anon of parent + child): max ${max_tree} KiB sampled, limit ${limit} KiB"
[ "$max_tree" -le "$limit" ] || { echo "FAIL: the tree over the budget after the fork"; fail=1; }
exit $fail
