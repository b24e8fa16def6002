#!/usr/bin/env bash
# uswap run's exit status is the program's (128 + signal when killed), and
# a program started by a shell (fork, then exec) is served as well: the
# shell's session ends at exec, the new image starts its own; a program
# that execs with pages swapped out leaves no slot behind.
# usage: run_status.sh USWAP RT_PROG
set -uo pipefail
uswap=$1 prog=$2
fail=0
expect() {	# STATUS DESCRIPTION -- ARGS...
	local want=$1 what=$2
	shift 3
	"$uswap" run --memory 2M --stats -- "$@" >"$out" 2>"$err"
	local rc=$?
	if [ $rc -ne "$want" ]; then
		echo "FAIL: $what: exit status $rc, want $want"
		grep -v '^  ' "$err"
		fail=1
	else
		echo "ok: $what: $rc"
	fi
}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=$dir/out err=$dir/err

expect 7 "exit 7" -- sh -c 'exit 7'
expect 137 "killed by SIGKILL" -- sh -c 'kill -9 $$'
grep -q "was killed by signal 9" "$err" || { echo "FAIL: no message for the signal"; fail=1; }
expect 3 "rt_prog through sh (fork + exec), then exit 3" -- sh -c "\"$prog\" check 6 && exit 3"
grep -q "rt_prog: ok, 0 wrong words" "$out" || { echo "FAIL: rt_prog through sh"; cat "$out"; fail=1; }
grep -Eq "[3-9] process\(es\)" "$err" || { echo "FAIL: the shell and the program were not both served"; grep -v '^  ' "$err"; fail=1; }
expect 0 "a program that closes uswap's descriptors" -- "$prog" closefds 6
grep -q "rt_prog: ok, 0 wrong words" "$out" || { echo "FAIL: closefds"; cat "$out"; fail=1; }
# The agent and the watchdog keep the shim's descriptors in a table of their
# own (docs/RUNTIME.md, "The shim's descriptors"): closing and reusing the
# numbers does not stop eviction, so the budget holds through both passes
# (512 pages + the 256-page fault slack + one batch; without eviction the
# reads would bring all 1536 pages in).
if grep -q "closed uswap's socket" "$err" ||
   ! [[ $(<"$err") =~ peak\ resident\ ([0-9]+) ]] || ((BASH_REMATCH[1] > 512 + 256 + 64)); then
	echo "FAIL: eviction stopped after the program closed the shim's descriptors"
	grep -v '^  ' "$err"; fail=1
fi
# Swap full with the budget reached: killed as the OOM killer would.
"$uswap" run --memory 2M --swap zram:4M -- "$prog" check 12 >"$out" 2>"$err"
rc=$?
if [ $rc -ne 137 ] || ! grep -q "out of memory and swap (killed by uswap run)" "$err" ||
   [ "$(grep -c 'as the OOM killer would' "$err")" -ne 1 ]; then
	echo "FAIL: swap full: exit status $rc"; grep -v '^  ' "$err"; fail=1
else
	echo "ok: swap full: killed with one message, $rc"
fi
# exec with pages swapped out: the old image's slots are freed, the new
# image is served (and verifies its own data).
expect 0 "exec with 8 MB in a 2 MB budget" -- "$prog" execfill 8
grep -q "8 MB verified, exec" "$out" && grep -q "rt_prog: ok, 0 wrong words" "$out" ||
	{ echo "FAIL: exec"; cat "$out"; fail=1; }
"$uswap" run --memory 2M --json "$dir/json" -- "$prog" execfill 8 >"$out" 2>"$err"
python3 - "$dir/json" <<'PY' || { echo "FAIL: exec left swap slots or swapped nothing"; fail=1; }
import json, sys
j = json.load(open(sys.argv[1]))
bad = [d for d in j["devices"] if d["inuse_pages"]]
print("exec: evicted %d, devices in use at the end %s" % (j["evicted"], bad))
sys.exit(1 if bad or j["evicted"] < 500 else 0)
PY
expect 127 "a program that does not exist" -- /nonexistent/program
# A client that connects to the supervisor and never says anything (a
# preempted `uswap stat`) must not hold up the faults: while the silent
# connection stays open, `uswap stat` answers twice and the program's
# faults go on being served between the two.
rm -f "$out" "$err"	# the job truncates them only once it runs
"$uswap" run --memory 2M -- "$prog" loop 8 >"$out" 2>"$err" &
run=$!
for _ in $(seq 400); do grep -q "rt_prog: filled" "$out" && break; sleep 0.05; done
pid=$(pgrep -P "$run" -f "loop 8" | head -1)
name=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^USWAP_RUN_SOCK=//p')
python3 - "$name" "$dir/silent" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect("\0" + sys.argv[1])
open(sys.argv[2], "w").close()
time.sleep(30)
PY
silent=$!
for _ in $(seq 200); do [ -e "$dir/silent" ] && break; sleep 0.05; done
sleep 0.2
f1=$(timeout 10 "$uswap" stat --json "$pid" 2>&1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["faults"])' 2>/dev/null)
sleep 0.5
f2=$(timeout 10 "$uswap" stat --json "$pid" 2>&1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["faults"])' 2>/dev/null)
kill "$run" 2>/dev/null
timeout 20 tail --pid="$run" -f /dev/null || kill -9 "$run"
wait "$run" 2>/dev/null
kill "$silent" 2>/dev/null; wait "$silent" 2>/dev/null
if [ -z "$name" ] || ! [[ $f1 =~ ^[0-9]+$ && $f2 =~ ^[0-9]+$ ]] || ((f2 <= f1)); then
	echo "FAIL: with a silent client connected: socket '$name', faults '$f1' then '$f2'"
	grep -v '^  ' "$err"; fail=1
else
	echo "ok: a silent client connected: uswap stat answered, faults $f1 -> $f2"
fi
# A priority that is not a number from 0 to 32767 is refused, whatever follows it.
for prio in 5x 5,junk "" -1 32768 99999999999999999999; do
	if "$uswap" run --memory 2M --swap "zram:64M,prio=$prio" -- true >"$out" 2>"$err"; then
		echo "FAIL: --swap zram:64M,prio=$prio was accepted"; fail=1
	elif ! grep -q "bad priority" "$err"; then
		echo "FAIL: --swap zram:64M,prio=$prio: no reason"; cat "$err"; fail=1
	fi
done
"$uswap" run --memory 2M --swap "zram:64M,prio=7" -- true || { echo "FAIL: prio=7 refused"; fail=1; }
exit $fail
