#!/usr/bin/env bash
# uswap mkswap on NBD exports (nbdkit on a Unix socket): a bad URI, no
# server, an export too small, SIZE past the export: exit 1 with a clear
# message; a good export is formatted, and swapio over it reads back every
# page and reports the NBD latency.
set -u
USWAP=$1
d=$(mktemp -d /tmp/uswap-nbd-sh-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$d"
}
trap cleanup EXIT
fail() { echo "mkswap_nbd: FAIL: $*"; exit 1; }

# nbdkit NAME ARGS..: start it, wait for its pid file (written once it listens)
start() {
	local name=$1; shift
	nbdkit -f --exit-with-parent -U "$d/$name.sock" -P "$d/$name.pid" "$@" 2>"$d/$name.log" &
	pids+=($!)
	for _ in $(seq 1 5000); do
		[ -e "$d/$name.pid" ] && return 0
		kill -0 "${pids[-1]}" 2>/dev/null || fail "nbdkit $name exited"
		sleep 0.002
	done
	fail "nbdkit $name did not start"
}

expect_fail() {	# WHAT PATTERN ARGS..
	local what=$1 pat=$2; shift 2
	out=$("$USWAP" mkswap "$@" 2>&1); rc=$?
	[ $rc -eq 1 ] || fail "$what: exit $rc, want 1 ($out)"
	grep -q -- "$pat" <<<"$out" || fail "$what: no '$pat' in: $out"
}

expect_fail "bad URI" "missing host" "nbd://"
expect_fail "no server" "cannot connect" "nbd+unix:///?socket=$d/none.sock"
start small memory 16K
expect_fail "too small" "at least" "nbd+unix:///?socket=$d/small.sock"
start good memory 16M
U="nbd+unix:///?socket=$d/good.sock"
expect_fail "SIZE past the export" "larger than the export" "$U" 32M
out=$("$USWAP" mkswap -L nbdswap "$U" 2>&1) || fail "mkswap: $out"
grep -q "LABEL=nbdswap" <<<"$out" || fail "mkswap output: $out"
out=$("$USWAP" bench --workload swapio --swap "$U" --runs 1 2>&1) || fail "bench: $out"
grep -q "bad_pages 0" <<<"$out" || fail "bench: $out"
grep -q "nbd: read p50" <<<"$out" || fail "bench report: $out"
echo "mkswap_nbd: ok"
