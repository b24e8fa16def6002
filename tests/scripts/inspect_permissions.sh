#!/usr/bin/env bash
# uswap inspect warns once about a swap file that group or others may read
# or write (the command reports it; the library's swapon behind --design
# says nothing of its own), and not at all about a 0600 one. With
# --design, inspect swaps the file on, which refuses a file others can
# reach: the verdict says so and the command fails.
set -euo pipefail
uswap=$1
unset USWAP_QUIET
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
f=$dir/swap
"$uswap" mkswap "$f" 64M >/dev/null
fail=0

# Lines of stderr that are a permission warning.
warnings() { grep -i 'warning' "$1" | grep -ciE 'permission|chmod|mode 0[0-7]{3}|0600 suggested' || true; }

for mode in 0644 0600; do
	chmod "$mode" "$f"
	want=$([ "$mode" = 0600 ] && echo 0 || echo 1)
	for args in "" "--json" "--design table" "--design legacy" "--json --design legacy"; do
		# shellcheck disable=SC2086
		rc=0
		"$uswap" inspect $args "$f" >"$dir/out" 2>"$dir/err" || rc=$?
		got=$(warnings "$dir/err")
		case "$mode $args" in
		"0644 "*--design*)
			if [ $rc = 0 ] || ! grep -q 'mode 0644 lets other users' "$dir/out"; then
				echo "FAIL: inspect $args of a 0644 file: exit $rc, not refused:"
				cat "$dir/out"; fail=1
			fi ;;
		*)
			[ $rc = 0 ] || { echo "FAIL: mode $mode, inspect $args: exit $rc"; fail=1; } ;;
		esac
		if [ "$got" != "$want" ]; then
			echo "FAIL: mode $mode, inspect $args: $got permission warnings, want $want:"
			cat "$dir/err"
			fail=1
		fi
	done
done
[ "$fail" = 0 ] && echo "inspect: one permission warning for mode 0644, none for 0600"
exit $fail
