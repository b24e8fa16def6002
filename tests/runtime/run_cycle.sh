#!/usr/bin/env bash
# Lost pages when a program unmaps and maps again at the same address
# while a batch of its pages is out (docs/RUNTIME.md, "The move lock"):
# rt_cycle in the shape of stress-ng's vm stressor, four processes of one
# thread (4 MiB each under 8M) and two processes of two threads (8 MiB
# each thread under 16M), each for SECONDS, on DESIGN and POLICY.
# Required: every word right in every round, devices empty at the end,
# pages evicted. Before the move lock, the first run lost pages in 8 of 8
# tries (5,120-97,280 wrong words).
# usage: run_cycle.sh USWAP RT_CYCLE DESIGN POLICY [SECONDS]
set -uo pipefail
source "$(dirname "$0")/lib.sh"
uswap=$1 prog=$2 design=$3 policy=$4 secs=${5:-4}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
for cfg in "8M 4 1 4" "16M 2 2 8"; do
	set -- $cfg
	"$uswap" run --memory "$1" --design "$design" --evict "$policy" --json "$dir/json" \
		-- "$prog" "$2" "$3" "$4" "$secs" >"$dir/out" 2>"$dir/err"
	rc=$?
	echo "== --memory $1, rt_cycle $2 processes x $3 threads x $4 MiB, $design, $policy: exit $rc"
	cat "$dir/out"
	grep -v '^  ' "$dir/err"
	[ $rc -eq 0 ] || { echo "FAIL: exit $rc"; fail=1; }
	grep -q "^rt_cycle: ok, 0 wrong words$" "$dir/out" || { echo "FAIL: wrong data"; fail=1; }
	check_devices_empty "$dir/json"
	python3 - "$dir/json" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
print("evicted %d, unmaps %d, lock_busy %d, over_budget %d" %
      (j["evicted"], j["unmaps"], j.get("lock_busy", -1), j["over_budget"]))
if not j["evicted"] or not j["unmaps"]:
    print("FAIL: nothing evicted, or no unmap seen")
    sys.exit(1)
PY
done
exit $fail
