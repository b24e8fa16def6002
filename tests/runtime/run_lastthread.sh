#!/usr/bin/env bash
# Processes whose last thread is not main's end as without uswap
# (docs/RUNTIME.md, "Shim, agent and watchdog"): glibc calls exit(0) when
# the last thread it counts ends, and it counts the shim's threads too.
# rt_prog lastthread: main() calls pthread_exit() while a thread reads
# everything and forks a child in which the forking thread ends after
# starting a reader; then a Python program forks from a thread and the
# child's forking thread ends the same way (test_threading's
# test_3_join_in_forked_from_thread). Both must end, 0 wrong words, within
# the timeout; without the shim's ender they never did.
# usage: run_lastthread.sh USWAP RT_PROG
set -uo pipefail
. "$(dirname "$0")/lib.sh"
uswap=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
timeout -k 5 60 "$uswap" run --memory 2M --json "$dir/json" --stats \
	-- "$prog" lastthread 8 >"$dir/out" 2>"$dir/err"
rc=$?
check_run $rc "$dir"
grep -q "the child's last thread: ok" "$dir/out" || { echo "FAIL: the child did not read all"; fail=1; }

cat >"$dir/t.py" <<'PY'
import os, sys, threading
main_thread = threading.current_thread()
def joiner(t):
    t.join()
    print("end of thread", flush=True)
def worker():
    pid = os.fork()
    if pid:
        _, st = os.waitpid(pid, 0)
        print("child status", st, flush=True)
        return
    t = threading.Thread(target=joiner, args=(main_thread,))
    print("end of main", flush=True)
    t.start()
    t.join()
data = bytearray(8 << 20)
for i in range(0, len(data), 4096):
    data[i] = i % 251
threading.Thread(target=worker).start()
PY
timeout -k 5 60 "$uswap" run --memory 4M -- python3 "$dir/t.py" >"$dir/pyout" 2>"$dir/pyerr"
rc=$?
cat "$dir/pyout"
[ "$rc" -eq 0 ] || { echo "FAIL: the Python program: uswap run exited $rc"; head -5 "$dir/pyerr"; fail=1; }
grep -q "child status 0" "$dir/pyout" && grep -q "end of thread" "$dir/pyout" ||
	{ echo "FAIL: the Python program's child did not end well"; fail=1; }
exit $fail
