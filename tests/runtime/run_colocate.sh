#!/usr/bin/env bash
# Following the faulting thread (docs/RUNTIME.md). With one CPU allowed
# (nproc), following is off: no bind, no rescue in either run below. With
# two or more:
#   - rt_prog bench 6 under a 2 MiB budget, one thread faulting: the
#     serving thread binds to its CPU (colo_binds > 0) and wakes it at
#     SCHED_IDLE (colo_wakes > 0), after which it reads the thread's uffd
#     again at once (colo_bursts > 0, and at most one read per wake-up);
#     0 wrong words, devices empty; with --no-colocate it does neither;
#   - rt_prog pinspin 16 under 4 MiB: the faulting thread and a thread
#     spinning beside it are bound to one CPU, so the serving thread, bound
#     there at SCHED_IDLE after a wake-up, waits behind the spinner. The
#     guard must give it its policy back (colo_rescues > 0) and the time at
#     SCHED_IDLE must stay short: below 500 ms of the 2 s (58-99 ms with
#     the guard; without it, checked, 1,811 ms and half the reads), 0 wrong
#     words;
#   - rt_prog hop 16 under 4 MiB: a second thread moves the reading thread
#     to another CPU every 5 ms, so that some of its wake-ups from a fault
#     land on a CPU the serving thread is not bound to. The serving thread,
#     finding no fault waiting, must read its CPU and follow it there
#     (colo_moved > 0; 0 with that rule switched off); 0 wrong words,
#     devices empty; with --no-colocate colo_moved stays 0.
# usage: run_colocate.sh USWAP RT_PROG
set -uo pipefail
. "$(dirname "$0")/lib.sh"
uswap=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
cpus=$(nproc)

# run MEM OPT MODE MB: rt_prog MODE MB under --memory MEM and OPT into
# $dir/json; false (and FAIL printed) unless it exits 0 with 0 wrong words.
run() {
	rm -f "$dir/json"
	"$uswap" run --memory "$1" $2 --json "$dir/json" -- "$prog" "$3" "$4" >"$dir/out" 2>"$dir/err"
	local rc=$?
	echo "$3 ${2:-(default)}: $(cat "$dir/out")"
	if [ $rc -ne 0 ] || ! grep -q "wrong 0" "$dir/out"; then
		echo "FAIL: $3: exit $rc"; cat "$dir/err"; return 1
	fi
	check_devices_empty "$dir/json"
}

for opt in "" --no-colocate; do
	run 2M "$opt" bench 6 || { fail=1; continue; }
	python3 - "$dir/json" "$opt" "$cpus" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
off = sys.argv[2] == "--no-colocate" or int(sys.argv[3]) < 2
print("  binds %d wake-ups %d (%d ms) rescues %d, read in a row %d" % (j["colo_binds"],
      j["colo_wakes"], j["colo_idle_ms"], j["colo_rescues"], j["colo_bursts"]))
if j["colo_bursts"] > j["colo_wakes"]:
    print("FAIL: %d reads in a row for %d wake-ups at SCHED_IDLE" % (j["colo_bursts"], j["colo_wakes"]))
    sys.exit(1)
if off and (j["colo_binds"] or j["colo_wakes"] or j["colo_bursts"]):
    print("FAIL: following was off (%s, %s CPU(s)), yet the serving thread followed"
          % (sys.argv[2] or "default", sys.argv[3]))
    sys.exit(1)
if not off and (j["colo_binds"] == 0 or j["colo_wakes"] == 0 or j["colo_bursts"] == 0):
    print("FAIL: one thread faulting alone was never followed, or never read again at once")
    sys.exit(1)
PY
done

"$uswap" run --memory 4M --json "$dir/json" -- "$prog" pinspin 16 >"$dir/out" 2>"$dir/err"
rc=$?
echo "pinspin: $(cat "$dir/out")"
if [ $rc -ne 0 ] || ! grep -q "wrong 0" "$dir/out"; then
	echo "FAIL: pinspin: exit $rc"; cat "$dir/err"; fail=1
else
	python3 - "$dir/json" "$cpus" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
print("  binds %d wake-ups %d (%d ms) rescues %d" % (j["colo_binds"], j["colo_wakes"],
      j["colo_idle_ms"], j["colo_rescues"]))
bad = []
if int(sys.argv[2]) < 2:
    if j["colo_binds"] or j["colo_rescues"]:
        bad.append("one CPU: following should be off")
elif j["colo_rescues"] == 0:
    bad.append("the guard never gave the serving thread its policy back")
if j["colo_idle_ms"] >= 500:
    bad.append("%d ms at SCHED_IDLE: the serving thread was kept waiting" % j["colo_idle_ms"])
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
fi
for opt in "" --no-colocate; do
	run 4M "$opt" hop 16 || { fail=1; continue; }
	python3 - "$dir/json" "$opt" "$cpus" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
off = sys.argv[2] == "--no-colocate" or int(sys.argv[3]) < 2
print("  binds %d wake-ups %d moved %d" % (j["colo_binds"], j["colo_wakes"], j["colo_moved"]))
if off and j["colo_moved"]:
    print("FAIL: following was off, yet %d wake-ups were followed" % j["colo_moved"])
    sys.exit(1)
if not off and j["colo_moved"] == 0:
    print("FAIL: the reader woke on other CPUs, and was never followed there")
    sys.exit(1)
PY
done
exit $fail
