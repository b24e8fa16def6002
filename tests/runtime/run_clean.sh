#!/usr/bin/env bash
# A page read back and evicted unchanged is not written again
# (docs/RUNTIME.md, "Clean pages"). rt_prog readback 16 writes 16 MiB
# (4,096 pages) once, reads it back three times, rewrites every fourth page
# and reads everything twice more, under --memory 4M, on DESIGN: each read
# pass swaps every page in and evicts it again. Required: 0 wrong words,
# at most 1.3 device writes per page written by the program (4,096 + 1,024
# rewritten), clean evictions counted, the devices empty at the end; and
# with --no-keep-clean (MODES "kept nokeep", the default) and with
# --memory-total, where no copy is kept, the same data and more writes.
# usage: run_clean.sh USWAP RT_PROG DESIGN [MODES]
set -uo pipefail
. "$(dirname "$0")/lib.sh"
uswap=$1 prog=$2 design=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
for mode in ${4:-kept nokeep total}; do
	extra=()
	[ $mode = nokeep ] && extra=(--no-keep-clean)
	[ $mode = total ] && extra=(--memory-total 256M)
	"$uswap" run --memory 4M --design "$design" "${extra[@]}" --json "$dir/json" \
		-- "$prog" readback 16 >"$dir/out" 2>"$dir/err"
	rc=$?
	cat "$dir/out"
	grep -v '^  ' "$dir/err"
	[ "$rc" -eq 0 ] || { echo "FAIL: uswap run exited $rc ($mode)"; fail=1; }
	grep -q "wrong 0" "$dir/out" || { echo "FAIL: wrong data ($mode)"; fail=1; }
	check_devices_empty "$dir/json"
	python3 - "$dir/json" $mode <<'PY' || fail=1
import json, sys
j, mode = json.load(open(sys.argv[1])), sys.argv[2]
writes = sum(d["writes"] for d in j["devices"])
per = writes / (4096 + 1024)
print("%s: %d device writes, %.2f per page written, %d clean evictions of %d" %
      (mode, writes, per, j["evict_clean"], j["evicted"]))
if mode == "kept":
    assert per <= 1.3, "more than 1.3 writes per page"
    assert j["evict_clean"] > 3 * 4096 // 2, "too few clean evictions"
else:
    assert j["evict_clean"] == 0, "copies kept under " + mode
    assert per > 2, "a read pass without copies writes every page again"
PY
done
exit $fail
