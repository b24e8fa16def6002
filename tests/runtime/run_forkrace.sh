#!/usr/bin/env bash
# A program racing itself (docs/RUNTIME.md, "Races of a program
# with itself"): rt_prog forkrace forks while another thread drops
# (MADV_DONTNEED) or moves (mremap) a range, half of it swapped out, in 64
# rounds. Every child must see the whole range as before the call or as
# after it. Without the shim's fence (shim_libc.c) the children read zeros
# where swapped pages were in 6 runs of 6 (1-8 bad children per run).
# usage: run_forkrace.sh USWAP RT_PROG table|legacy
set -uo pipefail
. "$(dirname "$0")/lib.sh"
uswap=$1 prog=$2 design=${3:-table}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$uswap" run --memory 2M --design "$design" --json "$dir/json" --stats \
	-- "$prog" forkrace 8 >"$dir/out" 2>"$dir/err"
rc=$?
fail=0
check_run $rc "$dir"
python3 - "$dir/json" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
if j["fork_events"] < 64 or j["removes"] < 32 or j["remaps"] < 32 or j["fork_swapped"] < 64:
    print("FAIL: the races did not happen as meant (fork events %d, removes %d, remaps %d, "
          "pages out at fork %d)" % (j["fork_events"], j["removes"], j["remaps"],
                                     j["fork_swapped"])); sys.exit(1)
print("%d forks followed, %d removes, %d remaps, %d pages out of the parent at the forks" %
      (j["fork_events"], j["removes"], j["remaps"], j["fork_swapped"]))
PY
exit $fail
