#!/usr/bin/env bash
# stress-ng's own verification under uswap run (without the move lock,
# docs/RUNTIME.md "The move lock", it reported "detected 25600 memory
# errors" in 12 of 19 runs):
# RUNS runs of `stress-ng --vm 2 --vm-bytes 48M --verify` under --memory 24M
# on DESIGN and POLICY, the vm method taking turns (checkerboard, flip,
# cache-stripe, all). Required: every run exits 0 with stress-ng's
# "successful run" and no "fail" line, pages were evicted, devices empty.
# usage: run_stressng.sh USWAP DESIGN POLICY [RUNS] [SECONDS]
set -uo pipefail
source "$(dirname "$0")/lib.sh"
uswap=$1 design=$2 policy=$3 runs=${4:-5} secs=${5:-3}
command -v stress-ng >/dev/null || { echo "FAIL: stress-ng is not installed (.ci/run installs it)"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
methods=(checkerboard flip cache-stripe all)
fail=0
for r in $(seq "$runs"); do
	m=${methods[$(( (r - 1) % ${#methods[@]} ))]}
	"$uswap" run --memory 24M --design "$design" --evict "$policy" --json "$dir/json" \
		-- stress-ng --vm 2 --vm-bytes 48M --vm-method "$m" --verify -t "${secs}s" \
		>"$dir/out" 2>&1
	rc=$?
	ev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["evicted"])' "$dir/json" 2>/dev/null || echo 0)
	echo "run $r ($m): exit $rc, evicted $ev"
	if [ $rc -ne 0 ] || grep -q "fail" "$dir/out" || ! grep -q "successful run" "$dir/out"; then
		echo "FAIL: run $r"
		cat "$dir/out"
		fail=1
	fi
	[ "$ev" -gt 0 ] || { echo "FAIL: nothing evicted"; fail=1; }
	check_devices_empty "$dir/json"
done
exit $fail
