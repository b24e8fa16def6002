#!/usr/bin/env bash
# The runtime under failures on purpose (docs/RELIABILITY.md, "Failures on
# purpose"): rt_lru poison 6 (fill 6 MiB of tagged pages, read them all back
# with a SIGBUS handler) under a 2 MiB budget, on both designs, with
#   alloc: the supervisor's N-th allocation failing (USWAP_FAIL_ALLOC=N,
#          builds at USWAP_DEBUG >= 1), N = 1, 1+S, ... until a run counts
#          no failure;
#   write: the device's N-th write failing (--swap fault:write_err=N:zram:64M);
#   read:  the device's N-th read failing (--swap fault:read_err=N:zram:64M);
#          I/O N from 1 up to the pages the clean run wrote or read, in
#          USWAP_SWEEP_POINTS steps, on the designs of USWAP_SWEEP_IO_DESIGNS.
# Required of every run, within a timeout (no hang): no crash of the
# supervisor; no wrong word in the program; the pages that raised SIGBUS
# are exactly the pages uswap run reported lost, and their count is the
# "poisoned" counter; a failed write loses nothing (no SIGBUS at all); and
# the run either completes (exit 0, no slot left in use) or, for an
# allocation failure, ends clearly: uswap run refuses to start, or ends
# the tree after a fork it cannot follow, with a message (exit 1), or
# ends the program with one (SIGKILL, exit 137).
# Then the fork paths (the pager's copy of a parent's states, the child's
# session): rt_prog forks 3 (four children and a grandchild, each
# verifying every byte) under 1 MiB on the table design, with the
# supervisor's allocations failing every USWAP_SWEEP_FORK_STRIDE-th N; a
# completed run must say "rt_prog: ok, 0 wrong words".
# usage: run_sweep.sh USWAP RT_LRU RT_PROG
# USWAP_SWEEP_STRIDE (allocation step S, default 6), USWAP_SWEEP_POINTS (I/O
# failure points per direction and design, default 3),
# USWAP_SWEEP_IO_DESIGNS (default "table"; the runtime's code is the same
# for both), USWAP_SWEEP_FORK_STRIDE (default 50; 0: no fork sweep). The
# defaults are CI's share (about 20 runs); docs/RELIABILITY.md has a full
# run.
set -uo pipefail
uswap=$1 prog=$2 rtprog=$3
stride=${USWAP_SWEEP_STRIDE:-6}
points=${USWAP_SWEEP_POINTS:-3}
io_designs=${USWAP_SWEEP_IO_DESIGNS:-table}
fstride=${USWAP_SWEEP_FORK_STRIDE:-50}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0 runs=0 started=0 refused=0 killed=0 lost=0

# one_run DESIGN SPEC [ENV=VALUE]: run rt_lru under uswap run; sets rc.
one_run() {
	local design=$1 spec=$2
	shift 2
	rm -f "$dir/json"
	env "$@" timeout 60 "$uswap" run --memory 2M --design "$design" --swap "$spec" \
		--json "$dir/json" -- "$prog" poison 6 >"$dir/out" 2>"$dir/err"
	rc=$?
	runs=$((runs + 1))
}

# fork_run N: rt_prog forks under uswap run, allocation N failing; sets rc.
fork_run() {
	rm -f "$dir/json"
	USWAP_FAIL_ALLOC=$1 timeout 120 "$uswap" run --memory 1M --design table \
		--json "$dir/json" -- "$rtprog" forks 3 >"$dir/out" 2>"$dir/err"
	rc=$?
	runs=$((runs + 1))
}

# check WHAT: the requirements above on the last run; sets fail=1.
check() {
	local what=$1 got said n nget
	bad() { echo "FAIL: $what: $*"; sed 's/^/  | /' "$dir/out" "$dir/err" | tail -20; fail=1; }
	if [ "$rc" -eq 124 ]; then bad "no end within 60 s (a hang)"; return; fi
	if grep -qiE 'sanitizer|segmentation|assert|uswap_die|BUG|core dumped' "$dir/err"; then
		bad "the supervisor crashed"; return
	fi
	# wrong data: a page read wrong (rt_lru's count, rt_prog's per-pass
	# lines). A child killed by uswap run as the OOM killer would (status
	# 0x9, said on stderr) is an end; rt_prog's later children then exit 1
	# (its failure count is inherited), so exit 1 counts only without it.
	if grep -qE 'wrong [1-9]|: [1-9][0-9]* wrong words' "$dir/out"; then bad "wrong data"; return; fi
	if grep -q 'child failed (status 0x9)' "$dir/out"; then
		grep -q 'as the OOM killer would' "$dir/err" ||
			{ bad "a child was killed without a reason"; return; }
		killed=$((killed + 1)); return
	fi
	if grep -q 'child failed (status 0x100)' "$dir/out"; then bad "a child found wrong data"; return; fi
	case $rc in
	0)	grep -qE '^sigbus_pages [0-9]* wrong 0$|^rt_prog: ok, 0 wrong words' "$dir/out" ||
			{ bad "no verdict from the program"; return; }
		started=$((started + 1)) ;;
	1)	# refused at start, or the tree ended (a fork it cannot follow)
		[ -s "$dir/out" ] && ! grep -q 'every process of the tree is killed' "$dir/err" &&
			{ bad "exit 1 after the program ran"; return; }
		grep -q '^uswap run: ' "$dir/err" || { bad "exit 1 without a message"; return; }
		refused=$((refused + 1)); return ;;
	137)	grep -q 'killed by signal 9' "$dir/err" && grep -qE 'killing|out of memory' "$dir/err" ||
			{ bad "killed without a reason"; return; }
		killed=$((killed + 1)); return ;;
	*)	bad "exit $rc"; return ;;
	esac
	got=$(sed -n 's/^sigbus_at //p' "$dir/out" | sort -u)
	said=$(sed -n 's/.* page \(0x[0-9a-f]*\) lost to a device read error.*/\1/p' "$dir/err" | sort -u)
	nget=$(printf '%s\n' "$got" | grep -c .)
	[ "$got" = "$said" ] || { bad "SIGBUS at [$got], reported lost [$said]"; return; }
	if [ -s "$dir/json" ]; then
		n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["poisoned"])' "$dir/json")
		[ "$nget" = "$n" ] || { bad "$nget pages raised SIGBUS, $n counted poisoned"; return; }
		python3 - "$dir/json" <<'PY' || { bad "slots left in use"; return; }
import json, sys
sys.exit(any(d["inuse_pages"] for d in json.load(open(sys.argv[1]))["devices"]))
PY
	fi
	lost=$((lost + nget))
}

for design in table legacy; do
	# Allocations: until a run counts none failed.
	n=1 nallocs=0 total=0
	while :; do
		one_run $design zram:64M USWAP_FAIL_ALLOC=$n
		check "$design, allocation $n"
		counted=$(sed -n 's/.*USWAP_FAIL_ALLOC: \([0-9]*\) allocations counted, \([0-9]*\) failed.*/\1 \2/p' "$dir/err")
		if [ -z "$counted" ]; then
			echo "FAIL: $design, allocation $n: no allocation count (a build at USWAP_DEBUG 0?)"
			fail=1; break
		fi
		nallocs=$((nallocs + 1)); total=${counted% *}
		[ "${counted#* }" = 0 ] && break
		n=$((n + stride))
		[ $n -gt 2000 ] && { echo "FAIL: $design: more than 2000 allocations"; fail=1; break; }
	done
	echo "$design: allocations: $nallocs runs, N = 1..$n step $stride ($total allocations in a run)"
	# I/O: the clean run's page counts bound N.
	[[ " $io_designs " == *" $design "* ]] || continue
	one_run $design zram:64M
	check "$design, no failure"
	read -r writes reads < <(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))["devices"][0]; print(d["writes"], d["reads"])' "$dir/json")
	for op in write read; do
		max=$([ $op = write ] && echo "$writes" || echo "$reads")
		step=$(( max / points > 0 ? max / points : 1 ))
		k=0
		for ((n = 1; n <= max; n += step)); do
			one_run $design fault:${op}_err=$n:zram:64M
			check "$design, ${op} $n"
			if [ $op = write ] && grep -q '^sigbus_pages [1-9]' "$dir/out"; then
				echo "FAIL: $design, write $n: a failed write lost a page"; fail=1
			fi
			k=$((k + 1))
		done
		echo "$design: ${op}s: $k runs, N = 1..$max step $step"
	done
done
if [ "$fstride" -gt 0 ]; then
	n=1 k=0
	while :; do
		fork_run $n
		check "forks, allocation $n"
		counted=$(sed -n 's/.*USWAP_FAIL_ALLOC: \([0-9]*\) allocations counted, \([0-9]*\) failed.*/\1 \2/p' "$dir/err")
		k=$((k + 1))
		# no count: uswap run ended the tree (a child it cannot follow)
		[ -n "$counted" ] && [ "${counted#* }" = 0 ] && break
		n=$((n + fstride))
		[ $n -gt 2000 ] && { echo "FAIL: forks: more than 2000 allocations"; fail=1; break; }
	done
	echo "table: forks: allocations: $k runs, N = 1..$n step $fstride (${counted% *} allocations in a run)"
fi
echo "run_sweep: $runs runs: $started ran to the end ($lost pages lost to read errors, each" \
     "reported), $refused refused at start, $killed ended by uswap run; crashes, hangs," \
     "wrong words: 0 unless FAIL above"
exit $fail
