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
	python3 - "$d/json" <<'PY' || fail=1
import json, sys
bad = [d for d in json.load(open(sys.argv[1]))["devices"] if d["inuse_pages"]]
if bad:
    print("FAIL: devices not empty at the end:", bad)
    sys.exit(1)
PY
}
