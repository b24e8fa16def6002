#!/usr/bin/env bash
# A fault of the shim's agent while its own batch is out is never left
# waiting for the budget (docs/RUNTIME.md, "Budget: what a fault waits
# for"): the agent answers that batch only after the fault, so a wait is a
# hang. The shim's test hook (USWAP_DEBUG >= 1) makes the agent read a page
# of the program as each batch comes, as a libc call reading the program's
# data would; rt_prog agentread fills 48 MiB at 0x500000000000 under 8 MiB
# and reads it back twice, and the agent reads page k of it at its k-th
# batch, often at the line. Each run must end within the timeout with 0
# wrong words, and over the runs of a design some of those reads must have
# been served past the line (agent_over_budget): without the rule every run
# hung.
# usage: run_agent_fault.sh USWAP RT_PROG
set -uo pipefail
. "$(dirname "$0")/lib.sh"
uswap=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
for design in table legacy; do
	passed=0
	for i in 1 2 3 4; do
		USWAP_TEST_AGENT_READ=500000000000:12288 timeout -k 5 60 "$uswap" run \
			--design "$design" --memory 8M --json "$dir/json" \
			-- "$prog" agentread 48 >"$dir/out" 2>"$dir/err"
		rc=$?
		[ "$rc" -eq 0 ] || { echo "FAIL: $design run $i: uswap run exited $rc"; grep -v '^  ' "$dir/err" | head -5; fail=1; continue; }
		grep -q "agentread wrong 0" "$dir/out" || { echo "FAIL: $design run $i: wrong data"; cat "$dir/out"; fail=1; }
		check_devices_empty "$dir/json"
		n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["agent_over_budget"])' "$dir/json")
		passed=$((passed + n))
	done
	echo "$design: $passed reads of the agent served past the line in 4 runs"
	[ "$passed" -gt 0 ] || { echo "FAIL: $design: the agent's reads never met the line: the test tested nothing"; fail=1; }
done
exit $fail
