#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# uswap run against kernel swap, one script, one run (root).
#
# The same program under both:
#   kernel  a zram device of its own (hot_add, lz4, swapon at the highest
#           priority) and a cgroup v1 memory cgroup limited to LIMIT;
#   uswap   `uswap run --memory LIMIT --swap zram:4G:lz4 --design D`, both
#           designs (uswap-table, uswap-legacy).
# Workloads: rt_prog bench MB (fill MB/s, sequential swap-in MB/s, random
# page reads p50/p99), rt_prog forkbench MB (the parent's ops/s from fork()
# to the end of a child that reads everything), and redis-server with
# redis-benchmark GET during BGSAVE in the seeds' shape
# (-r KEYS -n KEYS -d 1024 -c 12 -P 32 -t get) after redis-benchmark's own
# SET pass over the same -r. ROUNDS rounds; the configurations run back to
# back in each round, in an order that alternates between rounds. Ratios
# uswap/kernel of the medians with a 95% interval (percentile bootstrap of
# the paired rounds, as src/cli/bench_stats.c does).
# The floor: each rt_prog round also runs bench/bench_uffd_fault once on
# the same zram device: "same+move" (a handler on the faulting CPU, one
# UFFDIO_COPY and one UFFDIO_MOVE per fault) is the least a userfaultfd
# swap-in costs on this machine, "swapin" the kernel's own swap-in of a
# page. Printed: uswap's random p50 against the floor, and redis GET rps
# against what the floor allows (the kernel's rps x the kernel's swap-in
# p50 / the floor p50), beside the plain ratios.
#
# Everything it sets up is torn down on exit, failure or signal (trap):
# the cgroup, the zram device, the redis-servers it started.
#
# usage: bench/kernel_compare.sh [BUILD_DIR] [ROUNDS] [MB] [REDIS_KEYS] [BASE_USWAP]
#   defaults: build 5 96 60000; LIMIT is a third of MB for rt_prog, and a
#   third of redis's resident size after the SET pass (measured) for redis.
#   BASE_USWAP: another build's uswap binary (its shim next to it) or build
#   directory, or a script that runs uswap with other options, run in every round as
#   "uswap-base" (table design): before/after figures in one run.
# Environment:
#   KC_CHRT=1     run each measured program (each under a minute) at
#                 real-time priority, `chrt -f 1`, on both sides: the
#                 kernel's swap work (reclaim, compression, swap-in) runs in
#                 the program's own threads and so gets the same priority;
#   KC_POLL_US=N  add the configuration "uswap-poll": uswap run --poll-us N
#                 in the rt_prog rounds (default 100; 0: left out);
#   KC_REDIS_HEADROOM_MB=N  extra MiB for the kernel's cgroup in the redis
#                 rounds (room for BGSAVE's dirty dump file, which uswap's
#                 budget does not count; default 0).
set -euo pipefail
build=${1:-build} rounds=${2:-5} mb=${3:-96} keys=${4:-60000} base=${5:-}
rt=() poll_us=${KC_POLL_US:-100} redis_headroom=${KC_REDIS_HEADROOM_MB:-0}
[ "${KC_CHRT:-0}" = 1 ] && rt=(chrt -f 1)
uswap=$build/uswap prog=$build/tests/runtime/rt_prog floor_bench=$build/bench/bench_uffd_fault
limit_mb=$((mb / 3))

[ "$(id -u)" = 0 ] || { echo "kernel_compare.sh: needs root (zram, cgroups)" >&2; exit 1; }
for f in "$uswap" "$prog" "$floor_bench"; do
	[ -x "$f" ] || { echo "kernel_compare.sh: $f missing: make build first" >&2; exit 1; }
done
# A base given as a build directory means its uswap; anything else must be
# a program to run (its runs' errors go nowhere once the rounds start).
[ -n "$base" ] && [ -d "$base" ] && base=$base/uswap
[ -z "$base" ] || { [ -f "$base" ] && [ -x "$base" ]; } ||
	{ echo "kernel_compare.sh: BASE_USWAP $base is not a uswap binary, a build directory or a script" >&2; exit 1; }
for b in redis-server redis-benchmark redis-cli mkswap swapon swapoff; do
	command -v $b >/dev/null || { echo "kernel_compare.sh: $b is not installed" >&2; exit 1; }
done
[ -d /sys/fs/cgroup/memory ] && [ -e /sys/class/zram-control/hot_add ] ||
	{ echo "kernel_compare.sh: needs the cgroup v1 memory controller and zram" >&2; exit 1; }

# One run at a time on the machine.
exec 9>/run/uswap-kernel-compare.lock
flock -n 9 || { echo "kernel_compare.sh: another run holds /run/uswap-kernel-compare.lock" >&2; exit 1; }

dir=$(mktemp -d)
cg=/sys/fs/cgroup/memory/uswap-kcmp-$$
zdev=""
redis_pids=()

cleanup() {
	set +e
	for p in "${redis_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	if [ -d "$cg" ]; then
		for _ in $(seq 50); do
			[ -s "$cg/cgroup.procs" ] || break
			xargs -r kill -9 <"$cg/cgroup.procs" 2>/dev/null
			sleep 0.1
		done
		rmdir "$cg"
	fi
	if [ -n "$zdev" ]; then
		swapoff "/dev/zram$zdev" 2>/dev/null
		echo 1 >"/sys/block/zram$zdev/reset" 2>/dev/null
		echo "$zdev" >/sys/class/zram-control/hot_remove
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# The kernel's side: a zram device of our own, lz4, and a memory cgroup.
zdev=$(cat /sys/class/zram-control/hot_add)
echo lz4 >"/sys/block/zram$zdev/comp_algorithm"
echo 4G >"/sys/block/zram$zdev/disksize"
mkswap "/dev/zram$zdev" >/dev/null
swapon -p 32767 "/dev/zram$zdev"
mkdir "$cg"
echo 60 >"$cg/memory.swappiness"

# cg_limit MB: an empty cgroup (the last run's page cache uncharged) with
# that limit and its peak reset.
cg_limit() {
	echo 0 >"$cg/memory.force_empty" 2>/dev/null || true
	echo $(($1 << 20)) >"$cg/memory.limit_in_bytes"
	echo 0 >"$cg/memory.max_usage_in_bytes"
}
# kernel LIMIT_MB CMD...: run CMD in the cgroup limited to LIMIT_MB plus
# the program's baseline (below: what uswap's budget does not count).
kernel() {
	local l=$1
	shift
	cg_limit $((l + base_mb))
	sh -c 'echo $$ >"$0/cgroup.procs"; exec "$@"' "$cg" ${rt[@]+"${rt[@]}"} "$@"
}
# The baseline: the cgroup's peak charge for rt_prog on 1 MB (its binary,
# libc, stacks, page tables): uswap's budget counts only the program's
# registered anonymous pages, the cgroup counts all of it.
base_mb=0
cg_limit 4096
sh -c 'echo $$ >"$0/cgroup.procs"; exec "$@"' "$cg" "$prog" bench 1 >/dev/null
base_mb=$(( ($(cat "$cg/memory.max_usage_in_bytes") >> 20) ))
# uswap DESIGN LIMIT_MB CMD...
under_uswap() {
	local d=$1 l=$2
	shift 2
	${rt[@]+"${rt[@]}"} "$uswap" run --memory "${l}M" --swap zram:4G:lz4 --design "$d" \
		${extra:-} -- "$@"
}

# The configurations of one round, in an order alternating by round.
order() {
	if (($1 % 2)); then echo "$2"; else echo "$2" | tr ' ' '\n' | tac | tr '\n' ' '; fi
}

echo "kernel_compare: rt_prog ${mb} MB under ${limit_mb} MiB (the kernel's cgroup: + ${base_mb} MiB of baseline), $rounds rounds; ${rt[*]:-no chrt}; $(uptime)"
# report rt|redis: the tables of one part (each printed as soon as its
# rounds are done, so that a failure later leaves the first).
report() {
	python3 - "$1" "$dir" "$mb" "$limit_mb" "$keys" "${redis_limit:-0}" $configs <<'PY'
import sys, statistics, random
what, d, mb, lim, keys, rlim = sys.argv[1:7]
cfg = sys.argv[7:]

def rows(name):
    out = []
    for l in open(d + "/" + name):
        f = l.split()
        out.append(dict(zip(f[0::2], map(float, f[1::2]))))
    return out

def ci(u, k):
    # 95% percentile bootstrap of median(u)/median(k) over paired rounds.
    if len(u) < 2:
        return float("nan"), float("nan")
    rng = random.Random(0x9e3779b9)
    n, rs = len(u), []
    for _ in range(4000):
        idx = [rng.randrange(n) for _ in range(n)]
        mk = statistics.median([k[i] for i in idx])
        rs.append(statistics.median([u[i] for i in idx]) / mk if mk else float("inf"))
    rs.sort()
    return rs[int(0.025 * len(rs))], rs[int(0.975 * len(rs)) - 1]

def floor_rows():
    try:
        return rows("floor")
    except OSError:
        return []

def ratio_ci(u, k):
    lo, hi = ci(u, k)
    return "%.2f [%.2f-%.2f]" % (statistics.median(u) / statistics.median(k), lo, hi)

def cell(v):
    return "%.1f (%.1f-%.1f)" % (statistics.median(v), min(v), max(v))

def table(title, metrics, configs, base, data):
    print("\n" + title)
    print("| metric | " + " | ".join(configs) + " | " +
          " | ".join("%s/%s [95%% CI]" % (c, base) for c in configs if c != base) + " |")
    print("|---" * (1 + 2 * len(configs) - 1) + "|")
    # A round in which one configuration failed (nan) is left out of all.
    ok = [i for i in range(len(data[base])) if all(
        i < len(data[c]) and data[c][i][metrics[0][1]] == data[c][i][metrics[0][1]]
        for c in configs)]
    if len(ok) < len(data[base]):
        print("(%d of %d rounds left out: a configuration failed in them)" %
              (len(data[base]) - len(ok), len(data[base])))
    if not ok:
        return
    for m, key in metrics:
        vals = {c: [data[c][i][key] for i in ok] for c in configs}
        ratios = []
        for c in configs:
            if c == base:
                continue
            lo, hi = ci(vals[c], vals[base])
            ratios.append("%.2f [%.2f-%.2f]" % (statistics.median(vals[c]) /
                                                statistics.median(vals[base]), lo, hi))
        print("| %s | " % m + " | ".join(cell(vals[c]) for c in configs) + " | " +
              " | ".join(ratios) + " |")

if what == "rt":
  bench = {c: rows("bench." + c) for c in cfg}
  fork = {c: rows("fork." + c) for c in cfg}
  for c in cfg:
      for r in bench[c] + fork[c]:
          assert r["wrong"] == 0, (c, r)
  table("rt_prog bench %s MB, limit %s MiB: median (min-max) of %d rounds" % (mb, lim, len(bench["kernel"])),
        [("fill MB/s", "fill_MBps"), ("sequential swap-in MB/s", "seq_read_MBps"),
         ("random read p50 us", "rand_p50_us"), ("random read p99 us", "rand_p99_us")],
        cfg, "kernel", bench)
  fl = floor_rows()
  ok = [i for i in range(len(fl)) if fl[i]["floor_p50_us"] == fl[i]["floor_p50_us"] and
        all(i < len(bench[c]) and bench[c][i]["rand_p50_us"] == bench[c][i]["rand_p50_us"]
            for c in cfg)]
  if ok:
      f50 = [fl[i]["floor_p50_us"] for i in ok]
      ks = [fl[i]["swapin_p50_us"] for i in ok]
      print("\nthe userfaultfd floor (bench_uffd_fault, same+move p50): %s us; the kernel's "
            "swap-in p50 there: %s us; floor/kernel swap-in %s" %
            (cell(f50), cell(ks), ratio_ci(f50, ks)))
      print("| random read p50 against the floor | " + " | ".join(
          "%s: %s" % (c, ratio_ci([bench[c][i]["rand_p50_us"] for i in ok], f50))
          for c in cfg if c != "kernel") + " |")
  table("rt_prog forkbench %s MB, limit %s MiB" % (mb, lim),
        [("parent ops/s, fork to child exit", "fork_parent_ops"), ("fork() ms", "fork_ms"),
         ("window ms", "fork_window_ms"), ("parent op p50 us (bucket's upper bound)", "fork_op_p50_us"),
         ("share of the parent's time in ops of 1 ms or more", "fork_slow_share")],
        cfg, "kernel", fork)
if what == "redis":
  rcfg = ["kernel", "uswap-table", "uswap-legacy"] + (["uswap-base"] if "uswap-base" in cfg else [])
  redis = {}
  for c in rcfg:
      redis[c] = [dict(rps=float(l.split()[0]), bgsave_ms=float(l.split()[1]))
                  for l in open(d + "/redis." + c)]
  table("redis-benchmark -r %s -n %s -d 1024 -c 12 -P 32 -t get during BGSAVE, limit %s MiB" %
        (keys, keys, rlim), [("GET requests/s", "rps"), ("BGSAVE + GET ms", "bgsave_ms")],
        rcfg, "kernel", redis)
  fl = [r for r in floor_rows() if r["floor_p50_us"] == r["floor_p50_us"]]
  kr = [r["rps"] for r in redis["kernel"] if r["rps"] == r["rps"]]
  if fl and kr:
      f50 = statistics.median([r["floor_p50_us"] for r in fl])
      ks = statistics.median([r["swapin_p50_us"] for r in fl])
      allowed = statistics.median(kr) * ks / f50
      print("\nGET rps the floor allows: kernel %.0f x swap-in %.1f us / floor %.1f us = %.0f" %
            (statistics.median(kr), ks, f50, allowed))
      for c in rcfg[1:]:
          v = [r["rps"] for r in redis[c] if r["rps"] == r["rps"]]
          if v:
              print("| %s GET rps / floor-allowed | %.2f | plain %s/kernel %.2f |" %
                    (c, statistics.median(v) / allowed, c, statistics.median(v) / statistics.median(kr)))
PY
}

# nan_on_fail FILE KEYS CMD...: run CMD, its output appended to FILE; a run
# that fails (the kernel's cgroup OOM-killed it) appends a line of nan for
# KEYS, so that its round is left out of every table, and says so.
bench_keys="fill_MBps seq_read_MBps rand_p50_us rand_p99_us"
fork_keys="fork_ms fork_parent_ops fork_window_ms fork_op_p50_us fork_slow_share"
nan_on_fail() {
	local file=$1 keys=$2 k line=""
	shift 2
	if ! "$@" >>"$file"; then
		for k in $keys; do line="$line$k nan "; done
		echo "${line}wrong 0" >>"$file"
		echo "kernel_compare: a run failed under $c (round $r; for the kernel: see dmesg for the OOM killer); its round is left out" >&2
	fi
}
# floor_round: bench_uffd_fault once, as "floor_p50_us X swapin_p50_us Y".
floor_round() {
	local out
	if out=$(${rt[@]+"${rt[@]}"} "$floor_bench" 1 2>&1); then
		# a mode's p50 is the first number on its line
		awk 'function p50(i) { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9.]+$/) return $i }
		     $1 == "same+move" {f = p50()} $1 == "swapin" {k = p50()}
		     END {print "floor_p50_us " (f ? f : "nan") " swapin_p50_us " (k ? k : "nan")}' <<<"$out"
	else
		echo "floor_p50_us nan swapin_p50_us nan"
		echo "kernel_compare: bench_uffd_fault failed (round $r): $out" >&2
	fi
}
configs="kernel uswap-table uswap-legacy${base:+ uswap-base}"	# both designs, as the redis rounds
((poll_us > 0)) && configs="$configs uswap-poll"
for r in $(seq "$rounds"); do
	floor_round >>"$dir/floor"
	for c in $(order "$r" "$configs"); do
		case $c in
		kernel) nan_on_fail "$dir/bench.$c" "$bench_keys" kernel $limit_mb "$prog" bench "$mb"
			nan_on_fail "$dir/fork.$c" "$fork_keys" kernel $limit_mb "$prog" forkbench "$mb" ;;
		uswap-table|uswap-legacy)
			under_uswap ${c#uswap-} $limit_mb "$prog" bench "$mb" >>"$dir/bench.$c" 2>/dev/null
			under_uswap ${c#uswap-} $limit_mb "$prog" forkbench "$mb" >>"$dir/fork.$c" 2>/dev/null ;;
		uswap-poll)
			extra="--poll-us $poll_us" under_uswap table $limit_mb "$prog" bench "$mb" >>"$dir/bench.$c" 2>/dev/null
			extra="--poll-us $poll_us" under_uswap table $limit_mb "$prog" forkbench "$mb" >>"$dir/fork.$c" 2>/dev/null ;;
		uswap-base)
			uswap=$base under_uswap table $limit_mb "$prog" bench "$mb" >>"$dir/bench.$c" 2>/dev/null
			uswap=$base under_uswap table $limit_mb "$prog" forkbench "$mb" >>"$dir/fork.$c" 2>/dev/null ;;
		esac
	done
	echo "  round $r done: $(cut -d" " -f1-3 /proc/loadavg)"
done

echo "kernel_compare: the kernel's cgroup OOM-killed $(awk '/^oom_kill / {print $2}' "$cg/memory.oom_control") rt_prog run(s)"
report rt

# redis: start it, fill it, GET during BGSAVE.
port=$((21000 + $$ % 20000))
# What the kernel's cgroup did in a redis round: peak, swap, OOM kills.
kernel_note() {
	echo "  kernel redis round: peak $(($(cat "$cg/memory.max_usage_in_bytes") >> 20)) MiB of $(($(cat "$cg/memory.limit_in_bytes") >> 20)), swap $(($(awk '/^swap / {print $2}' "$cg/memory.stat") >> 20)) MiB, dirty $(($(awk '/^dirty / {print $2}' "$cg/memory.stat") >> 10)) KiB, writeback $(($(awk '/^writeback / {print $2}' "$cg/memory.stat") >> 10)) KiB, oom kills $(($(awk '/^oom_kill / {print $2}' "$cg/memory.oom_control") - oom0))" >&2
}
redis_round() {	# CONFIG LIMIT_MB -> "rps bgsave_ms"
	local c=$1 l=$2 pid i
	local args=(redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no
		    --dir "$dir" --dbfilename "dump-$c.rdb")
	# Started directly (no subshell) so that $! is the process to kill.
	case $c in
	kernel) cg_limit 4096	# lowered to the limit after the SET pass (below)
		oom0=$(awk '/^oom_kill / {print $2}' "$cg/memory.oom_control")
		sh -c 'echo $$ >"$0/cgroup.procs"; exec "$@"' "$cg" ${rt[@]+"${rt[@]}"} "${args[@]}" \
			>/dev/null 2>&1 & ;;
	uswap-*) local bin=$uswap d=${c#uswap-}
		[ "$c" = uswap-base ] && bin=$base d=table
		${rt[@]+"${rt[@]}"} "$bin" run --memory "${l}M" --swap zram:4G:lz4 \
			--design "$d" --json "$dir/json.$c" -- \
			"${args[@]}" >/dev/null 2>"$dir/err.$c" & ;;
	esac
	pid=$!
	redis_pids+=("$pid")
	for i in $(seq 500); do
		redis-cli -p $port ping >/dev/null 2>&1 && break
		sleep 0.01
	done
	# redis-benchmark retries a dead server forever: a timeout, and a
	# round whose server died (the cgroup's OOM killer) counts as nan.
	timeout 120 redis-benchmark -p $port -r "$keys" -n $((keys * 2)) -d 1024 -c 12 -P 32 \
		-t set -q >/dev/null || true
	# The kernel's cgroup gets its limit now: at the limit from the start,
	# memcg v1 reclaim under twelve writing clients let the OOM killer take
	# redis-server during the SET pass in most rounds (all its pages on
	# the active list). Lowering it reclaims down to the limit, as uswap's
	# budget held it through the pass; the measured part is the same.
	if [ "$c" = kernel ]; then
		local want=$(((l + redis_base_mb + redis_headroom) << 20))
		for i in $(seq 50); do
			echo $want >"$cg/memory.limit_in_bytes" 2>/dev/null && break
			sleep 0.1
		done
		echo 0 >"$cg/memory.max_usage_in_bytes"
		if [ "$(cat "$cg/memory.limit_in_bytes")" != $want ]; then
			echo "kernel_compare: the kernel's cgroup could not reclaim down to its limit: round left out" >&2
			echo "nan nan"
			redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true
			wait "$pid" 2>/dev/null || true
			return
		fi
	fi
	redis-cli -p $port bgsave >/dev/null || true
	local t0 t1
	t0=$(date +%s%N)
	timeout 120 ${rt[@]+"${rt[@]}"} redis-benchmark -p $port -r "$keys" -n "$keys" -d 1024 \
		-c 12 -P 32 -t get --csv >"$dir/get" 2>/dev/null || true
	if ! redis-cli -p $port ping >/dev/null 2>&1; then
		[ "$c" = kernel ] && kernel_note
		echo "kernel_compare: redis-server died under $c (kernel: see dmesg for the OOM killer)" >&2
		[ -f "$dir/err.$c" ] && grep -v '^  ' "$dir/err.$c" | tail -5 >&2
		echo "nan nan"
		wait "$pid" 2>/dev/null || true
		rm -f "$dir/dump-$c.rdb"
		return
	fi
	for i in $(seq 3000); do
		redis-cli -p $port info persistence | grep -q "rdb_bgsave_in_progress:0" && break
		sleep 0.01
	done
	t1=$(date +%s%N)
	redis-cli -p $port info persistence | grep -q "rdb_last_bgsave_status:ok" ||
		echo "kernel_compare: BGSAVE failed under $c" >&2
	local rps
	rps=$(tail -1 "$dir/get" | cut -d, -f2 | tr -d '"')
	[[ $rps =~ ^[0-9.]+$ ]] || rps=nan
	echo "$rps $(((t1 - t0) / 1000000))"
	[ "$c" = kernel ] && kernel_note
	redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true
	wait "$pid" 2>/dev/null || true
	rm -f "$dir/dump-$c.rdb"	# or the next start loads it
}

# Size the budget from redis's own resident size with the dataset in; the
# kernel's baseline is the cgroup's charge for an empty redis-server.
cg_limit 4096
sh -c 'echo $$ >"$0/cgroup.procs"; exec "$@"' "$cg" \
	redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" >/dev/null 2>&1 &
redis_pids+=("$!")
for _ in $(seq 500); do redis-cli -p $port ping >/dev/null 2>&1 && break; sleep 0.01; done
redis_base_mb=$(( ($(cat "$cg/memory.max_usage_in_bytes") >> 20) + 1 ))
redis-benchmark -p $port -r "$keys" -n $((keys * 2)) -d 1024 -c 12 -P 32 -t set -q >/dev/null
rss_kb=$(awk '/^VmRSS/ {print $2}' "/proc/$(redis-cli -p $port info server | awk -F: '/^process_id/ {print $2+0}')/status")
dbsize=$(redis-cli -p $port dbsize)
redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true
wait "${redis_pids[-1]}" 2>/dev/null || true
redis_limit=$((rss_kb / 1024 / 3))
echo "kernel_compare: redis ${keys} keys (${dbsize} set), resident ${rss_kb} KiB, limit ${redis_limit} MiB (the kernel's cgroup: + ${redis_base_mb} MiB of baseline)"
for r in $(seq "$rounds"); do
	for c in $(order "$r" "kernel uswap-table uswap-legacy${base:+ uswap-base}"); do
		redis_round "$c" "$redis_limit" >>"$dir/redis.$c"
	done
	echo "  redis round $r done: $(cut -d" " -f1-3 /proc/loadavg)"
done

report redis
echo "kernel_compare: done; $(uptime)"
