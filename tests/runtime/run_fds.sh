#!/usr/bin/env bash
# What a program sees of uswap: nothing in its descriptor
# table (the shim's userfaultfd, socket and memfd live only in its own
# threads' tables), nothing on its stderr by default (the start-up check
# only with -v), in the first process, in a child followed by fork events
# and in one on the prefork path (--no-fork-events). Python lists
# /proc/self/fd in each, natively and under uswap run; the lists must be
# the same, and the program's stderr empty.
# usage: run_fds.sh USWAP
set -uo pipefail
uswap=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
prog='
import os, sys
def fds(): return sorted(int(f) for f in os.listdir("/proc/self/fd"))
print("parent", fds())
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    print("child", fds())
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
x = bytearray(24 << 20)
for i in range(0, len(x), 4096): x[i] = 1
print("sum", sum(x[::4096]))
'
python3 -c "$prog" >"$dir/native" 2>"$dir/native.err"
for opts in "" "--no-fork-events"; do
	"$uswap" run --memory 8M $opts -- python3 -c "$prog" >"$dir/out" 2>"$dir/err"
	rc=$?
	echo "== uswap run --memory 8M $opts: exit $rc"
	cat "$dir/out"
	[ $rc -eq 0 ] || { echo "FAIL: exit $rc"; fail=1; }
	diff "$dir/native" "$dir/out" >/dev/null ||
		{ echo "FAIL: not what it sees natively:"; cat "$dir/native"; fail=1; }
	[ -s "$dir/err" ] && { echo "FAIL: stderr not empty:"; cat "$dir/err"; fail=1; }
done
"$uswap" run -v -- true 2>"$dir/err"
grep -q "^uswap run: start-up check" "$dir/err" || { echo "FAIL: -v did not print the start-up check"; fail=1; }
[ $fail -eq 0 ] && echo "the same descriptors as natively, nothing on stderr; -v prints the start-up check"
exit $fail
