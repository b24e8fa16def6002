#!/usr/bin/env bash
# --swap-max limits the tree's swap use (docs/RUNTIME.md, "The swap limit
# (--swap-max)"). rt_prog check writes 32 MiB of non-zero pages (zero pages
# would take no device space) and checks every word, under --memory 8M
# --swap-max 4M: once 4 MiB are swapped, pages stay in the program (its
# resident set grows past --memory), and nothing is lost or hangs.
# `uswap stat --json` samples the swap use (swap_pages) while it runs; the
# supervisor's --json gives the exact peak (peak_swap_pages). Required: 0
# wrong words, every sample and the peak within 4 MiB (1024 pages), the
# limit reached (swap_full > 0), the devices empty at the end.
# usage: run_swapmax.sh USWAP RT_PROG
set -uo pipefail
. "$(dirname "$0")/lib.sh"
uswap=$1 prog=$2
limit_pages=1024
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$uswap" run --memory 8M --swap-max 4M --json "$dir/json" --stats \
	-- "$prog" check 32 >"$dir/out" 2>"$dir/err" &
sup=$!
wait_child $sup rt_prog
samples=0 maxs=0
while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do
	if "$uswap" stat --json "$pid" >"$dir/stat" 2>/dev/null &&
	   [[ $(<"$dir/stat") =~ \"swap_pages\":([0-9]+) ]]; then
		samples=$((samples + 1))
		((BASH_REMATCH[1] > maxs)) && maxs=${BASH_REMATCH[1]}
	fi
	sleep 0.02
done
wait $sup
rc=$?
fail=0
check_run $rc "$dir"
echo "uswap stat: $samples samples, swap use at most $maxs pages (limit $limit_pages)"
((maxs <= limit_pages)) || { echo "FAIL: a sample over the limit"; fail=1; }
python3 - "$dir/json" $limit_pages <<'PY' || fail=1
import json, sys
j, limit = json.load(open(sys.argv[1])), int(sys.argv[2])
print("supervisor: swap_max_pages %d, peak_swap_pages %d, swap_full %d, evicted %d"
      % (j["swap_max_pages"], j["peak_swap_pages"], j["swap_full"], j.get("evicted", -1)))
if j["swap_max_pages"] != limit:
    print("FAIL: swap_max_pages is not the limit"); sys.exit(1)
if j["peak_swap_pages"] > limit:
    print("FAIL: swap use over the limit"); sys.exit(1)
if not j["swap_full"] or j["peak_swap_pages"] < limit // 2:
    print("FAIL: the limit was never reached"); sys.exit(1)
PY
[ $fail -eq 0 ] && echo "PASS"
exit $fail
