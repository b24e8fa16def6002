#!/usr/bin/env bash
# Per-device figures over two NBD servers at one priority (nbdkit memory
# plugin on Unix sockets): `uswap bench --workload usemem` with two --swap
# specs reports each device's pages, share, latency and requests in
# flight, in text and JSON; the pages split between the two (round robin)
# and add up to the swap-outs. The turns are taken per cluster (512 pages:
# a thread keeps its cluster until it is full, then the slow path takes the
# next device), so with 16 clusters of data each device holds 30..70%.
# `uswap inspect URI` reads an export's header and reports the probe
# reads' latency; an unformatted export or no server: exit 1.
#   bash tests/nbd/bench_nbd_devices.sh BUILD/uswap
set -u
USWAP=$1
d=$(mktemp -d /tmp/uswap-nbd-dev-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$d"
}
trap cleanup EXIT
fail() { echo "bench_nbd_devices: FAIL: $*"; exit 1; }

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

start a memory 64M
start b memory 64M
start blank memory 16M
A="nbd+unix:///?socket=$d/a.sock"
B="nbd+unix:///?socket=$d/b.sock"
for u in "$A" "$B"; do
	out=$("$USWAP" mkswap "$u" 2>&1) || fail "mkswap $u: $out"
done

# inspect: a formatted export, an unformatted one, no server
out=$("$USWAP" inspect "$A" 2>&1) || fail "inspect $A: $out"
grep -q "valid swap area" <<<"$out" || fail "inspect: $out"
grep -q "32 probe reads.*latency p50 [0-9]* us, p99 [0-9]* us" <<<"$out" || fail "inspect: $out"
"$USWAP" inspect --json "$A" >"$d/inspect.json" 2>&1 || fail "inspect --json: $(cat "$d/inspect.json")"
python3 - "$d/inspect.json" <<'PY' || fail "inspect --json: $(cat "$d/inspect.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["valid"] and j["usable_pages"] == 16383, j
assert j["nbd"]["probe_reads"] == 32 and j["nbd"]["read_p50_us"] > 0, j
PY
out=$("$USWAP" inspect "nbd+unix:///?socket=$d/blank.sock" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "no swap signature" <<<"$out" || fail "inspect blank: exit $rc: $out"
out=$("$USWAP" inspect "nbd+unix:///?socket=$d/none.sock" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -q "cannot connect" <<<"$out" || fail "inspect no server: exit $rc: $out"

# the bench over both, JSON: two devices, a fair split, the sum
"$USWAP" bench --workload usemem --design table --memory 8M --size 32M --json \
	--swap "$A" --swap "$B" >"$d/bench.json" 2>"$d/bench.err" ||
	fail "bench --json: $(cat "$d/bench.json" "$d/bench.err")"
python3 - "$d/bench.json" "$A" "$B" <<'PY' || fail "bench --json: $(cat "$d/bench.json")"
import json, sys
j = json.load(open(sys.argv[1]))
devs = j["devices"]
assert [x["device"].split()[0] for x in devs] == sys.argv[2:4] or \
       [x["device"].split()[0] for x in devs] == sys.argv[3:1:-1], devs
assert sum(x["pages_out"] for x in devs) == j["swapouts"], (devs, j["swapouts"])
for x in devs:
    assert 0.3 <= x["pages_out_share"] <= 0.7, devs
    assert x["pages_in"] > 0 and x["errors"] == 0, devs
    n = x["nbd"]
    assert n["state"] == "connected" and n["read_p50_us"] > 0, devs
    assert n["read_p99_us"] >= n["read_p50_us"] and n["max_inflight"] >= 1, devs
PY
# and the text report names both, with their pages and latency
out=$("$USWAP" bench --workload usemem --design table --memory 8M --size 32M \
	--swap "$A" --swap "$B" 2>&1) || fail "bench: $out"
for s in a b; do
	grep -A2 "socket=$d/$s.sock nbd" <<<"$out" | grep -q "pages out [0-9]* .*(\([3-6][0-9]\|70\)\.[0-9]%)" ||
		fail "bench text, device $s: $out"
	grep -A2 "socket=$d/$s.sock nbd" <<<"$out" | grep -q "read p50 [0-9]* p99 [0-9]*.*in flight max" ||
		fail "bench text, device $s latency: $out"
done
echo "bench_nbd_devices: ok"
