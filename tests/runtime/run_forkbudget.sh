#!/usr/bin/env bash
# The budget holds for the tree across a fork (docs/RUNTIME.md,
# "Fork with fork events"): rt_prog forkbudget fills 3x the budget, forks a
# child that reads everything, writes half and rereads while the parent
# reads; then the parent reads everything three times. Sampled every 10 ms
# from /proc/PID/smaps_rollup: the tree's resident anonymous memory, the sum
# of Pss_Anon over the parent and its child (a page they share counts once,
# half to each), must stay within the budget plus the stated overhead, in
# both phases; 0 wrong words; every device empty at the end.
# usage: run_forkbudget.sh USWAP RT_PROG table|legacy
set -uo pipefail
. "$(dirname "$0")/lib.sh"
uswap=$1 prog=$2 design=${3:-table}
budget_mb=2 data_mb=6
# Overhead (stated in docs/RUNTIME.md): the fault slack (1 MiB), libc's and
# the shim's own memory in each of the two processes (~0.5 MiB each), and
# the pages the supervisor learns a child owns only at its next look
# (every 20 ms).
overhead_mb=3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$uswap" run --memory ${budget_mb}M --design "$design" --json "$dir/json" --stats \
	-- "$prog" forkbudget $data_mb >"$dir/out" 2>"$dir/err" &
sup=$!
wait_child $sup rt_prog
max_fork=0 max_after=0 samples_fork=0 samples_after=0 kids=
while [ -n "$pid" ] && [ -r /proc/$pid/smaps_rollup ]; do
	out=$(<"$dir/out")
	[[ $out == *forking* ]] || { sleep 0.01; continue; }
	[ -r /proc/$pid/task/$pid/children ] && read -r kids </proc/$pid/task/$pid/children
	smaps_kib $pid Pss_Anon:
	t=$REPLY
	for k in $kids; do
		smaps_kib $k Pss_Anon:
		t=$((t + REPLY))
	done
	if [[ $out == *"child exited"* ]]; then
		((t > max_after)) && max_after=$t
		samples_after=$((samples_after + 1))
	else
		((t > max_fork)) && max_fork=$t
		samples_fork=$((samples_fork + 1))
	fi
	kids=
	sleep 0.01
done
wait $sup
rc=$?
fail=0
check_run $rc "$dir"
python3 - "$dir/json" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
if j["fork_events"] != 1 or j["evicted"] < 1000:
    print("FAIL: fork not followed or too little swapping:", j); sys.exit(1)
# Pages the parent shared with the child and only read were refused by
# UFFDIO_MOVE (EBUSY) until written, even after the child exited: 100,000+
# refusals in this run before the agent made them exclusive again.
if j["evict_busy"] > 200:
    print("FAIL: %d pages refused by UFFDIO_MOVE (EBUSY)" % j["evict_busy"]); sys.exit(1)
# The parent's pages the child holds as shared, and the child's old pages
# after the parent's copy-on-write, are named to the agents in their batches
# (made exclusive before the move): some must have been, and moved so.
if j["evict_named"] < 100 or j["evict_unshared"] < 100:
    print("FAIL: %d pages named shared, %d moved after a write" %
          (j["evict_named"], j["evict_unshared"])); sys.exit(1)
print("evicted %d, swap-ins %d, evict_busy %d, named %d, unshared %d, over_budget %d, supervisor's peak %d pages" %
      (j["evicted"], j["swapins"], j["evict_busy"], j["evict_named"], j["evict_unshared"],
       j["over_budget"], j["peak_resident_pages"]))
PY
limit=$(( (budget_mb + overhead_mb) * 1024 ))
echo "tree's Pss_Anon: max ${max_fork} KiB while the child lives ($samples_fork samples)," \
	"max ${max_after} KiB after it exited ($samples_after samples); limit ${limit} KiB" \
	"(budget ${budget_mb} MiB + ${overhead_mb} MiB)"
[ $samples_fork -gt 0 ] && [ $samples_after -gt 0 ] || { echo "FAIL: no samples of a phase"; fail=1; }
[ "$max_fork" -le "$limit" ] || { echo "FAIL: over the budget while the child lives"; fail=1; }
[ "$max_after" -le "$limit" ] || { echo "FAIL: over the budget after the child exited"; fail=1; }
exit $fail
