#!/usr/bin/env bash
# uswap inspect warns once about a swap file that group or others may read
# or write (the command reports it; the library's swapon behind --design
# says nothing of its own), and not at all about a 0600 one.
set -euo pipefail
uswap=$1
unset USWAP_QUIET
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
f=$dir/swap
"$uswap" mkswap "$f" 64M >/dev/null
fail=0

# Lines of stderr that are a permission warning.
warnings() { grep -ciE 'permission|chmod|mode 0[0-7]{3}|0600 suggested' "$1" || true; }

for mode in 0644 0600; do
	chmod "$mode" "$f"
	want=$([ "$mode" = 0600 ] && echo 0 || echo 1)
	for args in "" "--json" "--design table" "--design legacy" "--json --design legacy"; do
		# shellcheck disable=SC2086
		"$uswap" inspect $args "$f" >"$dir/out" 2>"$dir/err"
		got=$(warnings "$dir/err")
		if [ "$got" != "$want" ]; then
			echo "FAIL: mode $mode, inspect $args: $got permission warnings, want $want:"
			cat "$dir/err"
			fail=1
		fi
	done
done
[ "$fail" = 0 ] && echo "inspect: one permission warning for mode 0644, none for 0600"
exit $fail
