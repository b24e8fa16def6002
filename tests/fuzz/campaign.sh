#!/usr/bin/env bash
# Run every fuzz target (or the ones named) for SECONDS each, one after the
# other, each from a scratch copy of its corpus, and print per target the
# executions, the coverage (cov and ft of libFuzzer's last status line) and
# the crashes (artifacts: crash, timeout, leak, OOM).
#
# Usage: tests/fuzz/campaign.sh [--merge] SECONDS [BUILD_DIR [TARGET...]]
#   BUILD_DIR  a clang build with -DUSWAP_FUZZ=ON (default build-fuzz; it is
#              configured if it does not exist, and the targets are built)
#   TARGET     NAME of tests/fuzz/fuzz_NAME.c; NAME:N runs it N seconds
#              instead of SECONDS; "all" (the default) every target not
#              named yet, e.g. "all proto:20"
#   --merge    add the inputs that bring new coverage to the repository's
#              corpus (libFuzzer -merge=1: existing files are kept); if that
#              would pass 300 files, only those with new edges
# Environment: FUZZ_JOBS (build jobs, default 2), FUZZ_NICE (default 19),
# FUZZ_KEEP=1 keeps the scratch directory (its path is printed).
# Exit status: 0 every target ran clean (or skipped, e.g. fuzz_proto where
# there is no userfaultfd), 1 a crash, timeout or leak (the input is kept in
# BUILD_DIR/fuzz-artifacts/NAME/), 2 usage or build error.
set -euo pipefail

merge=0
if [[ ${1:-} == --merge ]]; then
	merge=1
	shift
fi
secs=${1:-}
if [[ ! $secs =~ ^[0-9]+$ ]] || ((secs == 0)); then
	echo "usage: $0 [--merge] SECONDS [BUILD_DIR [TARGET[:SECONDS]|all]...]" >&2
	exit 2
fi
shift
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build-fuzz}
(($#)) && shift
[[ $build = /* ]] || build=$PWD/$build
jobs=${FUZZ_JOBS:-2}
nice=${FUZZ_NICE:-19}
max_corpus=300

all=()
for f in "$src"/tests/fuzz/fuzz_*.c; do
	n=${f##*/fuzz_}
	all+=("${n%.c}")
done
(($#)) || set -- all
# targets[i] runs for tsecs[i] seconds; "all" adds every target not listed
# yet, NAME:N sets (or adds) one target's time.
targets=()
tsecs=()
add() {	# add NAME SECONDS
	local i
	for i in "${!targets[@]}"; do
		if [[ ${targets[i]} == "$1" ]]; then
			tsecs[i]=$2
			return
		fi
	done
	targets+=("$1")
	tsecs+=("$2")
}
for t in "$@"; do
	if [[ $t == all ]]; then
		for n in "${all[@]}"; do
			[[ " ${targets[*]} " == *" $n "* ]] || add "$n" "$secs"
		done
		continue
	fi
	name=${t%%:*}
	s=$secs
	if [[ $t == *:* ]]; then
		s=${t#*:}
		[[ $s =~ ^[0-9]+$ ]] && ((s > 0)) || { echo "$0: bad time in '$t'" >&2; exit 2; }
	fi
	[[ -f $src/tests/fuzz/fuzz_$name.c ]] || { echo "$0: no target '$name'" >&2; exit 2; }
	add "$name" "$s"
done
names=()
for t in "${targets[@]}"; do
	names+=("fuzz_$t")
done

# Configured anew each time (a target added since is then known); a new
# directory gets clang and the targets, an existing one keeps its settings.
if [[ ! -f $build/CMakeCache.txt ]]; then
	cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER=clang -DUSWAP_FUZZ=ON -DUSWAP_WERROR=ON \
		-DUSWAP_BUILD_BENCH=OFF >/dev/null || exit 2
else
	cmake -S "$src" -B "$build" >/dev/null || exit 2
fi
nice -n "$nice" cmake --build "$build" -j "$jobs" --target "${names[@]}" >"$build/fuzz-build.log" 2>&1 || {
	tail -n 30 "$build/fuzz-build.log" >&2
	echo "$0: build failed (log: $build/fuzz-build.log)" >&2
	exit 2
}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/uswap-fuzz-XXXXXX")
[[ ${FUZZ_KEEP:-0} == 1 ]] || trap 'rm -rf "$scratch"' EXIT
status=0
printf '%-16s %6s %12s %8s %7s %7s %7s %s\n' target seconds executions exec/s cov ft corpus result
for i in "${!targets[@]}"; do
	name=${targets[i]}
	s=${tsecs[i]}
	bin=$build/tests/fuzz/fuzz_$name
	corpus=$src/tests/fuzz/corpus/$name
	work=$scratch/$name
	mkdir -p "$work/corpus" "$work/out"
	[[ -d $corpus ]] && find "$corpus" -maxdepth 1 -type f -exec cp -t "$work/corpus" {} +
	# A target that cannot run here says "fuzz_NAME: skipped: why" and
	# exits 77 on its first input, which libFuzzer reports as a crash.
	if nice -n "$nice" "$bin" -runs=0 "$work/corpus" 2>&1 | grep -m1 "^fuzz_$name: skipped" >"$work/skip"; then
		printf '%-16s %6s %12s %8s %7s %7s %7s %s\n' "$name" "$s" 0 0 - - - \
			"skipped: $(cut -d: -f3- "$work/skip" | cut -c2-70)"
		continue
	fi
	set +e
	nice -n "$nice" "$bin" -max_total_time="$s" -timeout=10 -rss_limit_mb=4096 \
		-print_final_stats=1 -close_fd_mask=3 -artifact_prefix="$work/out/" \
		"$work/corpus" >"$work/log" 2>&1
	rc=$?
	set -e
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
	last=$(grep -E '^#[0-9]+.*cov: ' "$work/log" | tail -n 1 || true)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	nfiles=$(find "$work/corpus" -maxdepth 1 -type f | wc -l)
	crashes=$(find "$work/out" -maxdepth 1 -type f | wc -l)
	if ((rc != 0 || crashes > 0)); then
		result="FAILED (exit $rc, $crashes artifact(s))"
		status=1
		mkdir -p "$build/fuzz-artifacts/$name"
		cp "$work"/out/* "$build/fuzz-artifacts/$name/" 2>/dev/null || true
		cp "$work/log" "$build/fuzz-artifacts/$name/log"
		grep -m 3 -E 'ERROR|SUMMARY|deadly signal' "$work/log" | sed 's/^/    /' || true
	else
		result=ok
	fi
	printf '%-16s %6s %12s %8s %7s %7s %7s %s\n' "$name" "$s" "${execs:-0}" \
		"$(( ${execs:-0} / (s ? s : 1) ))" "${cov:--}" "${ft:--}" "$nfiles" "$result"
	if ((merge)) && [[ $result == ok ]]; then
		# Into a copy first: past max_corpus files with hit counts as
		# features, merge again on edges alone (fewer, larger steps).
		mkdir -p "$corpus"
		before=$(find "$corpus" -maxdepth 1 -type f | wc -l)
		for counters in 1 0; do
			rm -rf "$work/merged"
			cp -r "$corpus" "$work/merged"
			nice -n "$nice" "$bin" -merge=1 -use_counters=$counters -timeout=10 \
				-close_fd_mask=3 "$work/merged" "$work/corpus" >"$work/merge.log" 2>&1 || {
				echo "    merge failed: $work/merge.log"; status=1; break; }
			(($(find "$work/merged" -maxdepth 1 -type f | wc -l) <= max_corpus)) && break
		done
		cp -n "$work"/merged/* "$corpus"/ 2>/dev/null || true
		after=$(find "$corpus" -maxdepth 1 -type f | wc -l)
		echo "    merged: $before -> $after files in tests/fuzz/corpus/$name"
		((after <= max_corpus)) || echo "    warning: more than $max_corpus files"
	fi
done
if ((status)); then
	echo "crash inputs and logs: $build/fuzz-artifacts/; replay one with" \
		"$build/tests/fuzz/fuzz_NAME FILE"
fi
[[ ${FUZZ_KEEP:-0} == 1 ]] && echo "scratch: $scratch"
exit $status
