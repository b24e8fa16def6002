#!/usr/bin/env bash
# The supervisor is killed mid-run: the program must die with the
# watchdog's message, not hang and not read zeros (rt_prog loop checks
# every page it reads and exits 1 on a wrong one).
# usage: run_killed.sh USWAP RT_PROG
set -uo pipefail
uswap=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$uswap" run --memory 4M -- "$prog" loop 16 >"$dir/out" 2>"$dir/err" &
sup=$!
for _ in $(seq 1000); do
	grep -q filled "$dir/out" && break
	sleep 0.01
done
pid=$(pgrep -P $sup -x rt_prog | head -1)
[ -n "$pid" ] || { echo "FAIL: the program did not start"; cat "$dir/err"; exit 1; }
sleep 0.3		# swapping in and out at random now
kill -9 $sup
for _ in $(seq 500); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.01
done
cat "$dir/out"; grep -v '^  ' "$dir/err"
if kill -0 "$pid" 2>/dev/null; then
	echo "FAIL: the program still runs 5 s after its supervisor died"
	kill -9 "$pid"
	exit 1
fi
grep -q "wrong data" "$dir/out" && { echo "FAIL: the program read wrong data"; exit 1; }
grep -q "the supervisor (uswap run, pid $sup) died: killing pid $pid" "$dir/err" ||
	{ echo "FAIL: no message"; exit 1; }
echo "ok: the program died with the message"
