#!/usr/bin/env bash
# A device read error reaches the program as SIGBUS for that page alone
# (docs/RUNTIME.md, "Read errors"). The device is zram in the fault
# wrapper with every read of slot 100 failing (--swap
# fault:read_err_slot=100:zram:64M); rt_lru poison fills 6 MiB under a
# 2 MiB budget (so slot 100 holds a page of it when the fill ends), then
# reads every page with a SIGBUS handler. Required, on both designs: the
# program exits 0 with 0 wrong words on the other pages; a poisoned page
# faults again on a second read; the pages that raised SIGBUS are exactly
# the pages uswap run reported lost (addresses), at least one, and their
# count is the "poisoned" counter of --json. (A poisoned page's slot is
# freed and may hold a later page, which then is lost too: the count is 1
# or more, and exact.)
# usage: run_poison.sh USWAP RT_LRU
set -uo pipefail
uswap=$1 prog=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
for design in table legacy; do
	"$uswap" run --memory 2M --design $design --swap fault:read_err_slot=100:zram:64M \
		--json "$dir/json" -- "$prog" poison 6 >"$dir/out" 2>"$dir/err"
	rc=$?
	got=$(sed -n 's/^sigbus_at //p' "$dir/out" | sort -u)
	said=$(sed -n 's/.* page \(0x[0-9a-f]*\) lost to a device read error.*/\1/p' "$dir/err" | sort -u)
	n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["poisoned"])' "$dir/json")
	nget=$(printf '%s\n' "$got" | grep -c .)
	echo "$design: $(tail -1 "$dir/out"); reported lost: $(echo $said); poisoned $n"
	if [ $rc -ne 0 ] || ! grep -q "^sigbus_pages [1-9][0-9]* wrong 0$" "$dir/out"; then
		echo "FAIL: $design: exit $rc"; cat "$dir/out" "$dir/err"; fail=1; continue
	fi
	[ "$got" = "$said" ] || { echo "FAIL: $design: SIGBUS at [$got], reported [$said]"; fail=1; }
	[ "$nget" = "$n" ] || { echo "FAIL: $design: $nget pages raised SIGBUS, $n counted"; fail=1; }
done
exit $fail
