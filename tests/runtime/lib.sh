# SPDX-License-Identifier: MIT
# Sourced by the runtime test scripts: the checks every rt_prog run ends with.

# check_run RC DIR: show DIR/out and the messages of DIR/err, then check the
# exit status RC, rt_prog's own verdict in DIR/out and that every swap
# device in DIR/json (uswap run --json) is empty at the end. Sets fail=1 on
# a failure; fail must be set before.
check_run() {
	local rc=$1 d=$2
	cat "$d/out"
	grep -v '^  ' "$d/err"
	[ "$rc" -eq 0 ] || { echo "FAIL: uswap run exited $rc"; fail=1; }
	grep -q "rt_prog: ok, 0 wrong words" "$d/out" || { echo "FAIL: wrong data"; fail=1; }
	check_devices_empty "$d/json"
}

# wait_child SUP NAME: the pid of SUP's child process named NAME (the
# program uswap run started), waited for up to 5 s, in $pid (empty if none).
wait_child() {
	local i
	pid=
	for i in $(seq 500); do
		pid=$(pgrep -P "$1" -x "$2" | head -1)
		[ -n "$pid" ] && return
		sleep 0.01
	done
}

# check_devices_empty JSON: every swap device in JSON (uswap run --json) is
# empty at the end; sets fail=1 if not.
check_devices_empty() {
	python3 - "$1" <<'PY' || fail=1
import json, sys
bad = [d for d in json.load(open(sys.argv[1]))["devices"] if d["inuse_pages"]]
if bad:
    print("FAIL: devices not empty at the end:", bad)
    sys.exit(1)
PY
}

# smaps_kib PID FIELD: REPLY = FIELD (e.g. Anonymous:, Pss_Anon:) of
# /proc/PID/smaps_rollup in KiB, 0 if the process is gone. No subshell: the
# scripts sample every 10 ms.
smaps_kib() {
	local k v _
	REPLY=0
	while read -r k v _; do
		[ "$k" = "$2" ] && REPLY=$v
	done 2>/dev/null </proc/$1/smaps_rollup
}
