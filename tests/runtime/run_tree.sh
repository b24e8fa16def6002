#!/usr/bin/env bash
# uswap run ends when the whole tree has: a process whose parent exited
# (reparented to uswap run, a subreaper) is served until it exits, also
# in the moment between its exec() and the new image's shim connecting,
# when it has no session. Each round: the first process exits 7 at once
# while a child it started execs a shell that sleeps, then writes a file.
# uswap run must return 7 after the file exists, and no process of the
# tree may run without the budget ("cannot reach the supervisor").
# usage: run_tree.sh USWAP
set -uo pipefail
uswap=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
for r in 1 2 3 4 5 6; do
	rm -f "$dir/late"
	timeout 60 "$uswap" run --memory 8M -- \
		sh -c "sh -c 'sleep 0.2; echo late > $dir/late' & exit 7" 2>"$dir/err"
	rc=$?
	msg=$(grep -v '^  ' "$dir/err" | grep -v "start-up check")
	if [ $rc -ne 7 ] || [ ! -e "$dir/late" ] || [ -n "$msg" ]; then
		echo "FAIL round $r: exit $rc (want 7), late file $( [ -e "$dir/late" ] && echo there || echo missing)"
		[ -n "$msg" ] && echo "  stderr: $msg"
		fail=1
	fi
done
sleep 0.3	# a process left running would write its file now
# A child uswap run had before the program is not of the tree: a shell's
# process substitution (forked before it exec'd uswap run) reads our
# stderr until we exit, and waiting for it would hang.
timeout 30 bash -c "exec \"$uswap\" run --memory 8M -- true 2> >(cat >/dev/null)"
rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: uswap run with a process substitution on its stderr: exit $rc (124: it hung)"
	fail=1
fi
[ $fail = 0 ] && echo "ok: 6 rounds, uswap run waited for the whole tree, and not for a child it had before"
exit $fail
