#!/usr/bin/env bash
# Whom uswap run reaches. A program the shim cannot be loaded into (static,
# or set-user-ID to another user) runs, with a warning before it starts that
# its memory is neither swapped nor bounded. A program that leaves a daemon
# behind: uswap run says so once, serves the daemon until it exits, passes
# a SIGTERM on to it (not to the first process's pid, which may be
# another process's by then), and exits with the first process's status.
# Memory glibc maps and unmaps with its own calls (large malloc blocks),
# which no interposer sees, is found and held to the budget.
# usage: run_reach.sh USWAP RT_PROG RT_PROG_STATIC
set -uo pipefail
uswap=$1 prog=$2 sprog=$3
dir=$(mktemp -d)
trap 'kill $(cat "$dir/daemon.pid" 2>/dev/null) 2>/dev/null; rm -rf "$dir"' EXIT
fail=0

"$uswap" run --memory 2M --stats -- "$sprog" check 4 >"$dir/out" 2>"$dir/err"
rc=$?
if [ $rc -ne 0 ] || ! grep -q "rt_prog: ok, 0 wrong words" "$dir/out" ||
   ! grep -q "warning: $sprog is statically linked" "$dir/err" ||
   ! grep -q " 0 process(es)" "$dir/err"; then
	echo "FAIL: static program: exit $rc"; cat "$dir/out"; grep -v '^  ' "$dir/err"; fail=1
else
	echo "ok: static program run, with the warning"
fi
# The dynamic program itself draws no warning.
"$uswap" run --memory 2M -- "$prog" check 4 >"$dir/out" 2>"$dir/err"
if grep -q "warning" "$dir/err"; then
	echo "FAIL: a dynamic program drew a warning"; grep -v '^  ' "$dir/err"; fail=1
fi
# Set-user-ID to nobody: the loader ignores LD_PRELOAD. A script whose
# interpreter is that program is followed to it.
cp "$prog" "$dir/suid" && chown nobody "$dir/suid" && chmod 4755 "$dir/suid"
printf '#!%s\n' "$dir/suid" >"$dir/script" && chmod 755 "$dir/script"
for what in suid script; do
	"$uswap" run --memory 2M -- "$dir/$what" >"$dir/out" 2>"$dir/err"
	if ! grep -q "warning: $dir/suid is set-user-ID" "$dir/err"; then
		echo "FAIL: $what: no warning"; grep -v '^  ' "$dir/err"; fail=1
	else
		echo "ok: $what: warned"
	fi
done

# glibc's own mmap/munmap: 16 MiB blocks, each filled by one pread(), under
# a 2 MiB budget. Before the agent rescanned on RT_FORGET, every block after
# the first ran unregistered for good (RssAnon 16.5 MiB). Measured 0.2 s
# after each read (the kernel fills a block before any rescan can see it).
# Allowed: the budget, the 1 MiB slack and 3 MiB of memory never registered
# (libc's early memory, stacks, the shim's own).
"$uswap" run --memory 2M -- "$prog" mallocread 16 >"$dir/out" 2>"$dir/err"
rc=$?
peak=$(sed -n 's/.*RssAnon 0.2 s after a read at most \([0-9]*\) KiB.*/\1/p' "$dir/out")
if [ $rc -ne 0 ] || ! grep -q "rt_prog: ok, 0 wrong words" "$dir/out" || [ -z "$peak" ] ||
   ((peak > 6144)); then
	echo "FAIL: malloc'd blocks: exit $rc, RssAnon at most ${peak:-?} KiB (limit 6144)"
	cat "$dir/out"; grep -v '^  ' "$dir/err"; fail=1
else
	echo "ok: malloc'd blocks counted: RssAnon at most $peak KiB under a 2 MiB budget"
fi

# A daemon: the first process exits 5 and leaves a child that would sleep
# for a minute.
start=$(date +%s)
"$uswap" run --memory 2M -- sh -c "sleep 60 & echo \$! > $dir/daemon.pid; exit 5" \
	>"$dir/out" 2>"$dir/err" &
run=$!
for _ in $(seq 100); do grep -q "live.* on (daemons)" "$dir/err" && break; sleep 0.1; done
if ! grep -q "first process exited with status 5; 1 process of its tree lives on" "$dir/err"; then
	echo "FAIL: no note of the daemon"; grep -v '^  ' "$dir/err"; fail=1
fi
kill -TERM "$run"
timeout 20 tail --pid="$run" -f /dev/null
wait "$run"
rc=$?
daemon=$(cat "$dir/daemon.pid")
if [ $rc -ne 5 ] || kill -0 "$daemon" 2>/dev/null || (( $(date +%s) - start > 30 )); then
	echo "FAIL: daemon: uswap run exit $rc (want 5), daemon $daemon $(kill -0 "$daemon" 2>/dev/null && echo alive || echo gone)"
	fail=1
else
	echo "ok: daemon served, SIGTERM passed on to it, exit 5"
fi
exit $fail
