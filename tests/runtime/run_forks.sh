#!/usr/bin/env bash
# Several forks in a row, BGSAVE-like, and a grandchild (rt_prog forks):
# each child reads everything and exits while the parent rewrites pages,
# under a budget a third of the data. With fork events: 0 wrong words,
# every fork followed (4 children + 1 grandchild), swap entries shared at
# every fork (fork_swap_dups), every child's session ended, every device
# empty at the end.
# Then children made by a raw clone() (no fork handler, no shim in the
# child: followed by fork events alone, named by their first fault, ended
# by the ESRCH probe): 0 wrong words, 3 followed and ended.
# usage: run_forks.sh USWAP RT_PROG table|legacy
set -uo pipefail
uswap=$1 prog=$2 design=${3:-table}
budget_mb=1 data_mb=3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
for mode in events; do
	"$uswap" run --memory ${budget_mb}M --design "$design" --json "$dir/json" --stats \
		-- "$prog" forks $data_mb >"$dir/out" 2>"$dir/err"
	rc=$?
	cat "$dir/out"
	grep -v '^  ' "$dir/err"
	[ $rc -eq 0 ] || { echo "FAIL ($mode): uswap run exited $rc"; fail=1; }
	grep -q "rt_prog: ok, 0 wrong words" "$dir/out" || { echo "FAIL ($mode): wrong data"; fail=1; }
	python3 - "$dir/json" $mode <<'PY' || fail=1
import json, sys
j, mode = json.load(open(sys.argv[1])), sys.argv[2]
bad = [d for d in j["devices"] if d["inuse_pages"]]
if bad:
    print("FAIL (%s): devices not empty at the end:" % mode, bad); sys.exit(1)
if j["evicted"] < 300:
    print("FAIL (%s): too little swapping to mean anything:" % mode, j); sys.exit(1)
if mode == "events":
    if j["fork_events"] != 5 or j["sessions"] != 6 or j["fork_sessions_ended"] != 5:
        print("FAIL: fork events %d (want 5), sessions %d (want 6), ended %d (want 5)" %
              (j["fork_events"], j["sessions"], j["fork_sessions_ended"])); sys.exit(1)
    if j["fork_swap_dups"] < 5 * 50:
        print("FAIL: only %d swap entries shared by forks" % j["fork_swap_dups"]); sys.exit(1)
else:
    if j["fork_events"] or j["fork_swap_dups"] or j["forks"] != 5:
        print("FAIL: --no-fork-events: fork events %d, shared %d, forks %d (want 0, 0, 5)" %
              (j["fork_events"], j["fork_swap_dups"], j["forks"])); sys.exit(1)
print("%s: evicted %d, swap-ins %d, forks %d, fork events %d, %d pages out of a parent at "
      "fork, %d swap entries shared (count 2 or more), devices empty" %
      (mode, j["evicted"], j["swapins"], j["forks"], j["fork_events"], j["fork_swapped"],
       j["fork_swap_dups"]))
PY
done
"$uswap" run --memory ${budget_mb}M --design "$design" --json "$dir/json" --stats \
	-- "$prog" rawclone $data_mb >"$dir/out" 2>"$dir/err"
rc=$?
cat "$dir/out"
grep -v '^  ' "$dir/err"
[ $rc -eq 0 ] || { echo "FAIL (rawclone): uswap run exited $rc"; fail=1; }
grep -q "rt_prog: ok, 0 wrong words" "$dir/out" || { echo "FAIL (rawclone): wrong data"; fail=1; }
python3 - "$dir/json" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
bad = [d for d in j["devices"] if d["inuse_pages"]]
if bad:
    print("FAIL (rawclone): devices not empty at the end:", bad); sys.exit(1)
if j["fork_events"] != 3 or j["fork_sessions_ended"] != 3 or j["fork_swap_dups"] < 1:
    print("FAIL (rawclone): fork events %d, ended %d (want 3, 3), shared %d" %
          (j["fork_events"], j["fork_sessions_ended"], j["fork_swap_dups"])); sys.exit(1)
print("rawclone: 3 children followed and ended, %d swap entries shared, %d forks met a batch "
      "in flight" % (j["fork_swap_dups"], j["fork_inflight"]))
PY
# Last, without CAP_SYS_PTRACE (dropped with setpriv; /dev/userfaultfd
# still opens): the start-up check says fork events are not usable, and the
# prefork path (as with --no-fork-events) keeps every child's data right.
setpriv --bounding-set=-sys_ptrace --inh-caps=-sys_ptrace -- \
	"$uswap" run --memory ${budget_mb}M --design "$design" --json "$dir/json" \
	-- "$prog" forks $data_mb >"$dir/out" 2>"$dir/err"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL (no CAP_SYS_PTRACE): uswap run exited $rc"; grep -v '^  ' "$dir/err"; fail=1; }
grep -q "rt_prog: ok, 0 wrong words" "$dir/out" || { echo "FAIL (no CAP_SYS_PTRACE): wrong data"; fail=1; }
grep -q "EVENT_FORK yes (not usable: needs CAP_SYS_PTRACE)" "$dir/err" &&
	grep -q "fork events are not available, so a child of fork() gets a fully resident copy" "$dir/err" ||
	{ echo "FAIL (no CAP_SYS_PTRACE): the start-up check does not say it"; cat "$dir/err"; fail=1; }
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["fork_events"] == 0 and j["forks"] == 5, j' \
	"$dir/json" || { echo "FAIL (no CAP_SYS_PTRACE): fork events used"; fail=1; }
[ $fail -eq 0 ] && echo "no CAP_SYS_PTRACE: the start-up check says so; 5 forks on the prefork path, 0 wrong words"
exit $fail
