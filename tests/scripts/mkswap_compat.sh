#!/usr/bin/env bash
# uswap mkswap / inspect against util-linux: blkid and swaplabel read our
# header, util-linux mkswap writes the same first page for the same label,
# UUID and size, uswap inspect reads util-linux's header, and refuses
# broken ones with a reason.
# Usage: bash mkswap_compat.sh /path/to/uswap
set -uo pipefail

USWAP=${1:?usage: mkswap_compat.sh /path/to/uswap}
PATH=$PATH:/sbin:/usr/sbin
for tool in blkid mkswap swaplabel; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool (util-linux) not found"
		exit 77
	fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
umask 077
uuid=6f1c2a3b-4d5e-4f60-8172-8394a5b6c7d8
fails=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# expect_line FILE TEXT: FILE has a line that is exactly TEXT.
expect_line() {
	grep -qxF -- "$2" "$1" || { fail "$1: no line '$2'"; sed 's/^/    /' "$1"; }
}

# (a) our header as util-linux sees it, and byte for byte as it writes it
out=$tmp/a.out
if ! "$USWAP" mkswap -L mylabel -U "$uuid" "$tmp/ours" 16M >"$out" 2>&1; then
	fail "uswap mkswap failed"; cat "$out"
fi
expect_line "$out" "Setting up swapspace version 1, size = 16380 KiB (16773120 bytes)"
expect_line "$out" "LABEL=mylabel, UUID=$uuid"
[ "$(stat -c %a "$tmp/ours")" = 600 ] || fail "created file mode is $(stat -c %a "$tmp/ours"), not 600"
[ "$(stat -c %s "$tmp/ours")" = 16777216 ] || fail "created file size is $(stat -c %s "$tmp/ours")"

blkid -p -o export "$tmp/ours" >"$tmp/blkid" 2>&1 || fail "blkid -p failed"
expect_line "$tmp/blkid" "TYPE=swap"
expect_line "$tmp/blkid" "LABEL=mylabel"
expect_line "$tmp/blkid" "UUID=$uuid"

swaplabel "$tmp/ours" >"$tmp/swaplabel" 2>&1 || fail "swaplabel failed"
expect_line "$tmp/swaplabel" "LABEL: mylabel"
expect_line "$tmp/swaplabel" "UUID:  $uuid"

truncate -s 16M "$tmp/theirs"
if ! mkswap -L mylabel -U "$uuid" "$tmp/theirs" >"$tmp/mkswap.out" 2>&1; then
	fail "util-linux mkswap failed"; cat "$tmp/mkswap.out"
fi
if ! cmp -n 4096 "$tmp/ours" "$tmp/theirs"; then
	fail "header page differs from util-linux mkswap's"
	cmp -l -n 4096 "$tmp/ours" "$tmp/theirs" | head -20
fi

# (b) util-linux's header as uswap inspect sees it
"$USWAP" inspect --json "$tmp/theirs" >"$tmp/b.json" 2>"$tmp/b.err" ||
	{ fail "inspect of a util-linux swap file exited $?"; cat "$tmp/b.err"; }
expect_line "$tmp/b.json" '  "valid": true,'
expect_line "$tmp/b.json" '  "version": 1,'
expect_line "$tmp/b.json" '  "last_page": 4095,'
expect_line "$tmp/b.json" '  "label": "mylabel",'
expect_line "$tmp/b.json" "  \"uuid\": \"$uuid\","
expect_line "$tmp/b.json" '  "usable_pages": 4095,'
expect_line "$tmp/b.json" '  "clusters": 8,'
"$USWAP" inspect "$tmp/theirs" >"$tmp/b.txt" 2>&1 || fail "inspect (text) exited $?"
grep -q "valid swap area" "$tmp/b.txt" || fail "no verdict in the text output"

# (c) broken areas: exit 1, a reason on stderr and in the JSON
expect_invalid() {
	local file=$1 reason=$2 rc

	"$USWAP" inspect --json "$file" >"$tmp/c.json" 2>"$tmp/c.err"
	rc=$?
	[ $rc = 1 ] || fail "inspect $file exited $rc, not 1"
	grep -qF -- "$reason" "$tmp/c.err" || { fail "stderr lacks '$reason'"; cat "$tmp/c.err"; }
	expect_line "$tmp/c.json" '  "valid": false,'
	grep -qF -- "\"error\": \"$reason" "$tmp/c.json" ||
		{ fail "JSON error lacks '$reason'"; cat "$tmp/c.json"; }
}

truncate -s 1M "$tmp/zero"
expect_invalid "$tmp/zero" "no swap signature (SWAPSPACE2) found"

cp "$tmp/ours" "$tmp/v0"
printf 'SWAP-SPACE' | dd of="$tmp/v0" bs=1 seek=4086 conv=notrunc status=none
expect_invalid "$tmp/v0" "old swap format SWAP-SPACE (v0) is not supported"

cp "$tmp/ours" "$tmp/short"
truncate -s 8M "$tmp/short"
expect_invalid "$tmp/short" \
	"swap area shorter than its header says: header last_page 4095 needs 4096 pages, file has 2048"

truncate -s 100 "$tmp/tiny"
expect_invalid "$tmp/tiny" "too small for a swap header: 100 bytes"

"$USWAP" inspect "$tmp/missing" >/dev/null 2>&1 && fail "inspect of a missing file succeeded"

# (d) a bad page list is written and read back; util-linux agrees on the rest
"$USWAP" mkswap --badpages 5,9,200 -L bad "$tmp/bad" 1M >"$tmp/d.out" 2>&1 ||
	{ fail "mkswap --badpages failed"; cat "$tmp/d.out"; }
expect_line "$tmp/d.out" "Setting up swapspace version 1, size = 1008 KiB (1032192 bytes)"
"$USWAP" inspect --json "$tmp/bad" >"$tmp/d.json" 2>&1 || fail "inspect of --badpages file exited $?"
expect_line "$tmp/d.json" '  "nr_badpages": 3,'
expect_line "$tmp/d.json" '  "badpages": [5, 9, 200],'
expect_line "$tmp/d.json" '  "usable_pages": 252,'
blkid -p -o export "$tmp/bad" | grep -qx "LABEL=bad" || fail "blkid does not see the label of the --badpages file"

# Refusals of mkswap itself
"$USWAP" mkswap "$tmp/small" 39K >/dev/null 2>&1 && fail "mkswap accepted 9 pages"
[ -e "$tmp/small" ] && fail "mkswap left a file behind after refusing"
"$USWAP" mkswap --badpages 0 "$tmp/b0" 1M >/dev/null 2>&1 && fail "mkswap accepted bad page 0"
"$USWAP" mkswap --badpages 256 "$tmp/b256" 1M >/dev/null 2>&1 && fail "mkswap accepted a bad page past the end"
"$USWAP" mkswap -U not-a-uuid "$tmp/u" 1M >/dev/null 2>&1 && fail "mkswap accepted a bad UUID"

if [ $fails -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "mkswap_compat: all checks passed"
exit 0
