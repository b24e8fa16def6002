#!/usr/bin/env bash
# The tree explains itself: no editor or patch leftovers are tracked, no
# comment points at a document outside the repository (the seeds' numbering,
# notes kept elsewhere), every docs/ path named in the tree exists, and no
# source refers to a src/ directory that does not exist.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
bad=0
files=$(git ls-files 2>/dev/null || find . -type f -not -path './.git/*' -not -path './build*' | sed 's|^\./||')

leftovers=$(grep -E '\.(orig|rej|bak|swp)$|~$' <<<"$files" || true)
if [ -n "$leftovers" ]; then
	echo "leftover files tracked:"; echo "$leftovers"; bad=1
fi

code=$(grep -E '^(src|include|tests|bench|man|fuzz)/.*\.(c|h|sh|py|in|map|txt)$|CMakeLists.txt$|^README.md$' <<<"$files" |
	grep -v '^tests/check_tree.sh$' || true)
# "seed 007", "seed-010", "KERNEL-FACTS", "shared CONVENTIONS", "DESIGN.md": outside documents
refs=$(grep -nE '[Ss]eed[ -]?0[0-9]{2}|KERNEL-FACTS|CONVENTIONS( #|\.md)|shared/|DESIGN\.md' $code 2>/dev/null || true)
if [ -n "$refs" ]; then
	echo "references to documents outside the repository (use docs/KERNEL-MAP.md or the kernel function's name):"
	echo "$refs"; bad=1
fi

for doc in $(grep -ohE 'docs/[A-Za-z0-9_-]+(\.md|/)' $code docs/*.md 2>/dev/null | sort -u); do
	[ -e "$doc" ] || { echo "dangling reference: $doc"; bad=1; }
done

# A mention of a missing src/ directory is dangling unless the line calls it
# planned or is a build glob (a pattern matches nothing until it exists).
for dir in $(grep -ohE '(^|[^$A-Za-z0-9_/])src/[a-z_]+/' $code 2>/dev/null |
	     sed -E 's|^[^s]*||' | sort -u); do
	[ -d "$dir" ] && continue
	hits=$(grep -nE "(^|[^\$A-Za-z0-9_/])$dir" $code | grep -viE 'planned|\*' || true)
	if [ -n "$hits" ]; then
		echo "reference to a missing directory $dir:"; echo "$hits"; bad=1
	fi
done
exit $bad
