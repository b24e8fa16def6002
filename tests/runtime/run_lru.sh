#!/usr/bin/env bash
# Cold-page choice (docs/RUNTIME.md, "Cold pages"): rt_lru hotcold under a
# budget of B pages (2 MiB) touches a hot set of B/4 pages before each of
# the 12 chunks (B/4 pages each) of a cold set of 3B pages, 2 sweeps; before
# each touch it counts the pages that are not present (pagemap): evicted
# since the last touch. The first sweep is not counted.
#
# Required, on both designs with --evict lru:
#   cold: >= 50% of the cold checks find the page absent: at most B + 256
#     pages (the fault slack) are resident, B/4 of them hot, against a cold
#     set of 3B touched in order; a cold page's refault distance (~2B) is
#     above B/2, so it is never activated by a refault, and its written
#     bit buys it at most one more pass of the inactive list (it is
#     written once per sweep, never twice in a row). Measured: 90-99%.
#   hot: absent at most B/4 times in all, i.e. at most once per hot page.
#     A hot page's refault distance is at most ~B/4 evictions (one cold
#     chunk between two hot passes) <= B/2, so its first refault activates
#     it (and a hot page written on two visits of the inactive tail is
#     activated without a refault); the active list (B/4 pages) stays
#     below half of the resident pages, so it is never aged out again. It can be evicted at most once
#     more after the first sweep (if it was never evicted during it): the
#     bound is structural, not a timing margin.
# With --evict fifo every hot page is evicted about once per B faults:
# 225 and 238 of the 1536 hot checks in two runs here, ~1.8x the bound.
# usage: run_lru.sh USWAP RT_LRU
set -uo pipefail
uswap=$1 prog=$2
budget_mb=2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
for run in table:lru legacy:lru; do
	design=${run%:*} policy=${run#*:}
	"$uswap" run --memory ${budget_mb}M --design "$design" --evict "$policy" \
		--json "$dir/json" -- "$prog" hotcold $budget_mb 2 >"$dir/out" 2>"$dir/err"
	rc=$?
	read -r _ ha _ hc _ ca _ cc _ wrong <"$dir/out"
	refaults=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("refaults/eviction %.3f activated %d" % (j["refaults_per_eviction"], j["refaults_activated"]))' "$dir/json")
	echo "$design $policy: hot absent $ha of $hc, cold absent $ca of $cc, wrong $wrong; $refaults"
	if [ $rc -ne 0 ] || [ "$wrong" != 0 ]; then
		echo "FAIL: $design $policy: exit $rc"; cat "$dir/err"; fail=1; continue
	fi
	if ((ca * 2 < cc)); then
		echo "FAIL: $design: cold pages stayed resident: $ca of $cc absent"; fail=1
	fi
	if ((ha > budget_mb * 256 / 4)); then
		echo "FAIL: $design: hot pages evicted $ha times (at most $((budget_mb * 64)))"; fail=1
	fi
done
exit $fail
