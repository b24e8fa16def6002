#!/usr/bin/env bash
# Regenerate tests/fuzz/corpus/swap_header/: valid and broken header pages
# (little-endian host), some followed by 8 bytes of file size in pages and
# a byte of error buffer length (see fuzz_swap_header.c).
# Usage: bash make_corpus_swap_header.sh /path/to/uswap
set -euo pipefail
USWAP=${1:?usage: make_corpus_swap_header.sh /path/to/uswap}
out=$(cd "$(dirname "$0")" && pwd)/corpus/swap_header
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
uuid=00112233-4455-4677-8899-aabbccddeeff

bytes() {	# bytes FILE OFFSET PRINTF-ESCAPED-STRING
	printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
le32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) \
	$(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
be32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) \
	$(($1 >> 8 & 255)) $(($1 & 255)); }
le64() { le32 $(($1 & 0xffffffff)); le32 $(($1 >> 32)); }
page() {	# page NAME [mkswap options...]: a 64 KiB area's header page
	local name=$1
	shift
	"$USWAP" mkswap -U "$uuid" "$@" "$tmp/area" 64K >/dev/null
	head -c 4096 "$tmp/area" >"$out/$name"
	rm -f "$tmp/area"
}

page valid_plain
page valid_label -L swap-label
page valid_bad --badpages 3,7,15
page valid_bad_full_area --badpages 1,2,3,4,5,6,7,8,9,10,11,12,13,14
page valid_label15 -L 0123456789abcde
cp "$out/valid_label15" "$out/valid_label16_no_nul"
bytes "$out/valid_label16_no_nul" 1067 'f'

cp "$out/valid_bad" "$out/valid_byteswapped"
bytes "$out/valid_byteswapped" 1024 "$(be32 1)$(be32 15)$(be32 3)"
bytes "$out/valid_byteswapped" 1536 "$(be32 3)$(be32 7)$(be32 15)"
# The bad list read in the other byte order, and its errors.
cp "$out/valid_byteswapped" "$out/invalid_byteswapped_bad_duplicate"
bytes "$out/invalid_byteswapped_bad_duplicate" 1540 "$(be32 3)"
cp "$out/valid_byteswapped" "$out/invalid_byteswapped_bad_past_last"
bytes "$out/invalid_byteswapped_bad_past_last" 1544 "$(be32 16)"
cp "$out/valid_byteswapped" "$out/invalid_byteswapped_bad_page0"
bytes "$out/invalid_byteswapped_bad_page0" 1536 "$(be32 0)"
cp "$out/valid_byteswapped" "$out/invalid_byteswapped_short_file"
bytes "$out/invalid_byteswapped_short_file" 4096 "$(le64 8)\\x40"
cp "$out/valid_bad" "$out/valid_bad_unsorted"
bytes "$out/valid_bad_unsorted" 1536 "$(le32 15)$(le32 3)$(le32 7)"
cp "$out/valid_bad_full_area" "$out/valid_byteswapped_full_area"
bytes "$out/valid_byteswapped_full_area" 1024 "$(be32 1)$(be32 15)$(be32 14)"
for i in $(seq 1 14); do
	bytes "$out/valid_byteswapped_full_area" $((1536 + 4 * (i - 1))) "$(be32 "$i")"
done

head -c 4096 /dev/zero >"$out/invalid_zero"
cp "$out/valid_plain" "$out/invalid_v0_magic"
bytes "$out/invalid_v0_magic" 4086 'SWAP-SPACE'
cp "$out/valid_plain" "$out/invalid_version2"
bytes "$out/invalid_version2" 1024 "$(le32 2)"
cp "$out/valid_plain" "$out/invalid_last_page0"
bytes "$out/invalid_last_page0" 1028 "$(le32 0)"
cp "$out/valid_plain" "$out/invalid_nr_bad_638"
bytes "$out/invalid_nr_bad_638" 1032 "$(le32 638)"
cp "$out/valid_byteswapped" "$out/invalid_byteswapped_nr_bad_638"
bytes "$out/invalid_byteswapped_nr_bad_638" 1032 "$(be32 638)"
cp "$out/valid_bad" "$out/invalid_bad_page0"
bytes "$out/invalid_bad_page0" 1540 "$(le32 0)"
cp "$out/valid_bad" "$out/invalid_bad_past_last"
bytes "$out/invalid_bad_past_last" 1540 "$(le32 16)"
cp "$out/valid_bad" "$out/invalid_bad_duplicate"
bytes "$out/invalid_bad_duplicate" 1540 "$(le32 3)"
cp "$out/valid_bad_full_area" "$out/invalid_all_bad"
bytes "$out/invalid_all_bad" 1032 "$(le32 15)"
bytes "$out/invalid_all_bad" $((1536 + 14 * 4)) "$(le32 15)"

# Headers followed by a file size and an error buffer length.
cp "$out/valid_plain" "$out/invalid_short_file"
bytes "$out/invalid_short_file" 4096 "$(le64 8)\\x40"
cp "$out/valid_plain" "$out/valid_long_file"
bytes "$out/valid_long_file" 4096 "$(le64 100000)\\x00"
cp "$out/valid_plain" "$out/valid_last_page_max"
bytes "$out/valid_last_page_max" 1028 "$(le32 4294967295)$(le32 1)"
bytes "$out/valid_last_page_max" 1536 "$(le32 4294967295)"
bytes "$out/valid_last_page_max" 4096 "$(le64 4294967296)\\x05"

if command -v mkswap >/dev/null 2>&1; then
	truncate -s 64K "$tmp/ul"
	mkswap -L util-linux -U "$uuid" "$tmp/ul" >/dev/null 2>&1
	head -c 4096 "$tmp/ul" >"$out/valid_util_linux"
fi
ls "$out" | wc -l
