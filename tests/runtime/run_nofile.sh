#!/usr/bin/env bash
# The supervisor's descriptors (docs/RUNTIME.md, "Known limits"): each
# followed process holds four. uswap run takes its soft RLIMIT_NOFILE up to
# the hard one, so a soft limit too small for the tree costs nothing; with
# the hard limit too small as well, new processes are turned away (they run
# without a budget and say so) and the supervisor does not spin on the
# connections it cannot take: its CPU stays a small part of the run.
# usage: run_nofile.sh USWAP
set -uo pipefail
uswap=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
# Twelve sleepers of 2 s each started together, each waited for by pid.
tree='p=; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 2 & p="$p $!"; done
	n=0; for x in $p; do wait $x && n=$((n + 1)); done; echo "ended $n"'

# run NOFILE OPTS...: the tree under uswap run at that limit; sets rc, wall_ms, cpu.
run() {
	local lim=$1 start
	shift
	start=$(date +%s%N)
	prlimit --nofile="$lim" -- "$uswap" run --memory 8M "$@" --json "$dir/json" -- sh -c "$tree" \
		>"$dir/out" 2>"$dir/err"
	rc=$?
	wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))
	cpu=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cpu_ms"])' \
		"$dir/json" 2>/dev/null || echo 999999)
	rm -f "$dir/json"
	echo "== --nofile=$lim $*: exit $rc, $(cat "$dir/out"), wall ${wall_ms} ms, supervisor CPU ${cpu} ms"
}

# A soft limit of 24 (the supervisor's own ~10 and three sessions), a hard
# one of 4096: every sleeper followed, none refused.
run 24:4096
[ $rc -eq 0 ] && grep -q "^ended 12$" "$dir/out" || { echo "FAIL: not every sleeper ended well"; fail=1; }
if grep -q "refused\|without a memory budget\|killing" "$dir/err"; then
	echo "FAIL: the soft limit turned processes away:"; grep -v '^  ' "$dir/err" | head -5; fail=1
fi

# Both limits at 24, each sleeper with a hello of its own
# (--no-fork-events; a child met by a fork event is killed when its uffd
# cannot be installed): turned away, not spun on.
run 24:24 --no-fork-events
[ $rc -eq 0 ] && grep -q "^ended 12$" "$dir/out" || { echo "FAIL: not every sleeper ended well"; fail=1; }
grep -q "without a memory budget" "$dir/err" ||
	{ echo "FAIL: no process was turned away at 24 descriptors (the test did not test)"; fail=1; }
[ "$(grep -c 'out of descriptors' "$dir/err")" -le 1 ] || { echo "FAIL: said more than once"; fail=1; }
[ "$cpu" -lt $((wall_ms / 4)) ] || { echo "FAIL: the supervisor spent ${cpu} ms of CPU in ${wall_ms} ms"; fail=1; }
# Connections that say nothing hold a descriptor each for 2 s (16 at most):
# at 24, accept4() fails with EMFILE. The supervisor takes the connection
# with a descriptor held in reserve and refuses it; a loop that kept the
# socket watched and the connection queued would spin (and a process that
# waits for its answer could wait for ever). The interpreter is run as
# itself (a wrapper script would fork, and children met by fork events are
# killed at the limit).
py=$(python3 -c 'import sys; print(sys.executable)')
hold='
import os, socket, time
held = []
for i in range(19):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.setblocking(False)
    try:
        s.connect(os.environ["USWAP_RUN_SOCK"])
    except BlockingIOError:
        pass
    held.append(s)
time.sleep(2.5)
print("held", len(held))
'
start=$(date +%s%N)
prlimit --nofile=24:24 -- "$uswap" run --memory 8M --json "$dir/json" -- "$py" -c "$hold" \
	>"$dir/out" 2>"$dir/err"
rc=$?
wall_ms=$(( ($(date +%s%N) - start) / 1000000 ))
cpu=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cpu_ms"])' "$dir/json" 2>/dev/null || echo 999999)
echo "== --nofile=24:24, silent connections: exit $rc, $(cat "$dir/out"), wall ${wall_ms} ms, supervisor CPU ${cpu} ms"
[ $rc -eq 0 ] && grep -q "^held 19$" "$dir/out" || { echo "FAIL: the holder did not end well"; grep -v '^  ' "$dir/err" | head -5; fail=1; }
grep -q "out of descriptors" "$dir/err" ||
	{ echo "FAIL: accept4() never ran out of descriptors (the test did not test)"; fail=1; }
[ "$cpu" -lt $((wall_ms / 4)) ] || { echo "FAIL: the supervisor spent ${cpu} ms of CPU in ${wall_ms} ms"; fail=1; }
[ $fail -eq 0 ] && echo "the soft limit raised; at the hard limit, processes and connections refused without a spin"
exit $fail
