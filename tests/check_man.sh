#!/usr/bin/env bash
# The manual check: every symbol libuswap.so exports has its man(3) page,
# generated from the header comments without a warning and up to date in
# the build tree; every page (those and the hand-written uswap.1 and
# uswap.7) renders without a groff warning; every uswap page a page
# refers to exists.
# Usage: check_man.sh LIBUSWAP_SO BUILD_MAN_DIR [SOURCE_DIR]
set -euo pipefail
so=${1:?usage: check_man.sh LIBUSWAP_SO BUILD_MAN_DIR [SOURCE_DIR]}
built=${2:?usage: check_man.sh LIBUSWAP_SO BUILD_MAN_DIR [SOURCE_DIR]}
src=${3:-$(cd "$(dirname "$0")/.." && pwd)}
if ! command -v groff >/dev/null; then
	echo "check_man: SKIP: groff is not installed (groff-base)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
err() { echo "check_man: $*" >&2; fail=1; }

# 1. The generator has nothing to say about the headers.
if ! python3 "$src/man/gen_man.py" --strict "$src" "$tmp/man" 2>"$tmp/warnings" ||
   [ -s "$tmp/warnings" ]; then
	cat "$tmp/warnings" >&2
	err "man/gen_man.py warns about the headers (above): fix the comments in include/uswap/."
fi

pages=("$built"/man3/*.3 "$src/man/uswap.1" "$src/man/uswap.7")
[ -e "${pages[0]}" ] || err "no page in $built/man3: build the uswap_man target."

# 2. One page per exported symbol, and no page for anything else; the
# build tree's pages (the ones installed) are the generator's of now.
nm -D --defined-only "$so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' |
	sort -u >"$tmp/exported"
(cd "$tmp/man/man3" && ls | sed -n 's/\.3$//p' | sort) >"$tmp/generated"
(cd "$built/man3" 2>/dev/null && ls | sed -n 's/\.3$//p' | sort) >"$tmp/built" || true
for s in $(comm -23 "$tmp/exported" "$tmp/generated"); do
	err "$s is exported but has no man page: give its declaration in" \
	    "include/uswap/ a kernel-doc comment ('/** $s() - ...')."
done
for s in $(comm -13 "$tmp/exported" "$tmp/built"); do
	err "$built/man3/$s.3 documents $s, which libuswap.so does not export."
done
if ! diff -r -I '^\.TH ' "$tmp/man/man3" "$built/man3" >"$tmp/diff" 2>&1; then
	err "the pages in $built/man3 are not those the headers give now:" \
	    "rebuild (the uswap_man target). $(grep -c '' "$tmp/diff") lines differ."
fi

# 3. Every page renders without a warning on an 80-column terminal (one
# groff run for all: its warnings name the file and line).
if ! groff -t -man -Tutf8 -ww -z -rLL=78n "${pages[@]}" 2>"$tmp/groff" || [ -s "$tmp/groff" ]; then
	cat "$tmp/groff" >&2
	err "the pages above do not render cleanly (groff -t -man -ww)."
fi

# 4. References to the project's pages resolve.
while IFS=: read -r p ref; do
	read -r _ name sect <<<"$ref"
	sect=${sect//[()]/}
	case "$name" in
	uswap*|folio_*|swap_*|swp_*) ;;
	*) continue ;;		# another project's page
	esac
	if [ "$sect" = 3 ]; then
		[ -f "$built/man3/$name.3" ] || err "$p refers to $name($sect), which does not exist."
	elif [ ! -f "$src/man/$name.$sect" ]; then
		err "$p refers to $name($sect), which does not exist."
	fi
done < <(grep -HoE '^\.BR +[A-Za-z_][A-Za-z0-9_]* +\([0-9]\)' "${pages[@]}")
if ((fail)); then
	echo "check_man: FAILED" >&2
	exit 1
fi
echo "check_man: ok, $(wc -l <"$tmp/exported") exported functions, each with its page; $((${#pages[@]})) pages render cleanly"
