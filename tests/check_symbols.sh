#!/usr/bin/env bash
# The ABI check: the symbols libuswap.so exports, the names in
# src/libuswap.map and the USWAP_API declarations of include/uswap/*.h must
# be one and the same set. Each mismatch is reported with what to change.
# Usage: check_symbols.sh LIBUSWAP_SO [SOURCE_DIR]
set -euo pipefail
so=${1:?usage: check_symbols.sh LIBUSWAP_SO [SOURCE_DIR]}
src=${2:-$(cd "$(dirname "$0")/.." && pwd)}
map=$src/src/libuswap.map
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Exported: defined dynamic symbols, without the version node's own
# absolute symbol, the @@VERSION suffix stripped.
nm -D --defined-only "$so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' |
	sort -u >"$tmp/exported"
# Declared: NAME and HEADER of each line that starts with USWAP_API.
for h in "$src"/include/uswap/*.h; do
	sed -nE 's/^[[:space:]]*USWAP_API[^(]*[^A-Za-z0-9_(]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\(.*/\1/p' "$h" |
		sed "s|\$| include/uswap/${h##*/}|"
done | sort -u >"$tmp/declared_where"
cut -d' ' -f1 "$tmp/declared_where" | sort -u >"$tmp/declared"
# Mapped: every NAME; in a global: part of the map (comments dropped).
sed -E 's|/\*.*\*/||; /^[[:space:]]*\/?\*/d' "$map" |
	awk '/global:/ { g = 1; next } /local:/ { g = 0; next }
	     g && match($0, /^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*;/) {
		s = substr($0, RSTART, RLENGTH); gsub(/[[:space:];]/, "", s); print s }' |
	sort >"$tmp/mapped_all"
sort -u "$tmp/mapped_all" >"$tmp/mapped"
node=$(sed -nE 's/^[[:space:]]*(USWAP_[0-9.]+)[[:space:]]*\{.*/\1/p' "$map" | tail -1)

fail=0
err() { echo "check_symbols: $*" >&2; fail=1; }
for s in $(uniq -d "$tmp/mapped_all"); do
	err "$s is named twice in src/libuswap.map: keep one."
done
for s in $(comm -23 "$tmp/declared" "$tmp/exported"); do
	h=$(awk -v s="$s" '$1 == s { print $2; exit }' "$tmp/declared_where")
	if grep -qx "$s" "$tmp/mapped"; then
		err "$s is declared USWAP_API in $h and named in src/libuswap.map," \
		    "but $so does not export it: define it in src/ (with USWAP_API)."
	else
		err "$s is declared USWAP_API in $h but not exported:" \
		    "add '$s;' to the $node node of src/libuswap.map."
	fi
done
for s in $(comm -13 "$tmp/declared" "$tmp/exported"); do
	err "$s is exported by $so but declared USWAP_API in no header of" \
	    "include/uswap/: declare it there, or drop its USWAP_API."
done
for s in $(comm -23 "$tmp/exported" "$tmp/mapped"); do
	err "$s is exported but not named in src/libuswap.map:" \
	    "add '$s;' to the $node node."
done
for s in $(comm -13 "$tmp/exported" "$tmp/mapped"); do
	grep -qx "$s" "$tmp/declared" && continue	# reported above
	err "src/libuswap.map names $s, which is neither declared USWAP_API in" \
	    "include/uswap/ nor exported: remove it from the map."
done
if ((fail)); then
	echo "check_symbols: FAILED (the map, the headers and $so disagree)" >&2
	exit 1
fi
echo "check_symbols: ok, $(wc -l <"$tmp/exported") symbols exported, declared and mapped ($node)"
