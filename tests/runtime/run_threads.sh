#!/usr/bin/env bash
# The budget's edge with many faults pending together (docs/RUNTIME.md,
# "Budget"): rt_prog threads 6 (32 threads fill 6 MiB, then read and
# rewrite random pages of all of it) under a 2 MiB budget. Required:
# 0 wrong words; pages evicted and swapped in; no fault served beyond the
# budget + the 256-page slack (over_budget 0: every page of this program
# can be evicted, so a batch can always be sent) and the supervisor's peak
# within budget + slack; every device empty at the end.
# Before the fix, the faults pending when a batch ended were all served
# past the line in that turn of the event loop (nothing in flight until
# balance() sent the next batch): over_budget 7,700-10,400 and the peak
# 24 pages over, in every run.
# usage: run_threads.sh USWAP RT_PROG
set -uo pipefail
. "$(dirname "$0")/lib.sh"
uswap=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
"$uswap" run --memory 2M --json "$dir/json" -- "$prog" threads 6 >"$dir/out" 2>"$dir/err"
check_run $? "$dir"
python3 - "$dir/json" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
line = j["budget_pages"] + 256
print("evicted %d swapins %d faults %d deferred %d (budget %d, batch %d); over_budget %d; "
      "peak resident %d, budget + slack %d" % (j["evicted"], j["swapins"], j["faults"],
      j["deferred"], j["wait_budget"], j["wait_evicting"], j["over_budget"],
      j["peak_resident_pages"], line))
bad = []
if j["evicted"] == 0 or j["swapins"] == 0:
    bad.append("nothing was swapped")
if j["over_budget"]:
    bad.append("%d faults served beyond budget + slack" % j["over_budget"])
if j["peak_resident_pages"] > line:
    bad.append("peak resident %d over budget + slack %d" % (j["peak_resident_pages"], line))
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
exit $fail
