#!/usr/bin/env bash
# The tree explains itself: no editor or patch leftovers are tracked, no
# comment points at a document outside the repository (the seeds' numbering,
# notes kept elsewhere), every docs/ path named in the tree exists, and no
# source refers to a src/ directory that does not exist.
# It reads as a reference, not a diary: no heading in docs/ is named by an
# issue, a branch, a date or an hour; no code carries a date, an issue
# number or a milestone tag (the names of merged branches: rtfork2,
# alloc3...), and no src/ comment one host's timing; every section a file
# cites as `docs/NAME.md, "Heading"` exists; and no two source files in
# different rooms share a name.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
bad=0
files=$(git ls-files 2>/dev/null || find . -type f -not -path './.git/*' -not -path './build*' | sed 's|^\./||')

leftovers=$(grep -E '\.(orig|rej|bak|swp)$|~$' <<<"$files" || true)
if [ -n "$leftovers" ]; then
	echo "leftover files tracked:"; echo "$leftovers"; bad=1
fi

code=$(grep -E '^(src|include|tests|bench|man|fuzz)/.*\.(c|h|sh|py|in|map|txt)$|CMakeLists.txt$|^README.md$' <<<"$files" |
	grep -vE '^tests/check_tree(_rules)?.sh$' || true)
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
# Milestone tags: the merged branches whose names are not words (a digit,
# a hyphen, or the runtime's rt prefix), and any word-digit tag.
tags=$(git log --format=%s 2>/dev/null | sed -nE "s/^Merge branch '([^']+)'.*/\1/p" |
       grep -E '[0-9-]|^rt[a-z]' | sort -u | paste -sd'|' || true)
tagre="\\b(${tags:-rtfork2})\\b"
heads=$(grep -nE '^#+ ' docs/*.md README.md 2>/dev/null |
	grep -iE "\\bissues? #?[0-9]+|\\(branch |\\bbranch [a-z0-9-]+\\)|\\((lead|rt[a-z]+[0-9]*|[a-z]+[0-9])[,)]|\\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\\b|\\b[0-2]?[0-9]:[0-5][0-9]\\b|$tagre" || true)
if [ -n "$heads" ]; then
	echo "headings named by an issue, a branch, a date or an hour (name them for what they hold):"
	echo "$heads"; bad=1
fi

history=$(grep -nEi "\\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\\b|\\bissues? #?[0-9]+\\b|$tagre" $code 2>/dev/null || true)
if [ -n "$history" ]; then
	echo "dates, issue numbers or milestone tags in code (history belongs in commit messages):"
	echo "$history"; bad=1
fi

hosts=$(grep -nE '(/\*|^\s*\*|//).*(\bPVM\b|on this (host|guest|machine|VM)\b)' \
	$(grep -E '^(src|include)/' <<<"$code") 2>/dev/null || true)
if [ -n "$hosts" ]; then
	echo "one host's measurements in src/ comments (figures go to docs/BENCHMARKS.md):"
	echo "$hosts"; bad=1
fi

dups=$(grep -E '^(src|include|tests|bench)/.*\.[ch]$' <<<"$files" | awk -F/ '{print $NF}' |
       sort | uniq -d)
for name in $dups; do
	echo "two source files named $name:"; grep -E "/$name\$" <<<"$files"; bad=1
done

# Cited sections: `docs/NAME.md, "Heading"` (also across comment lines) must
# start some heading of that document, or a list item's bold lead.
python3 - $code docs/*.md <<'PYEOF' || bad=1
import re, sys, os
heads = {}
def headings(doc):
    if doc not in heads:
        try:
            lines = open(doc, encoding='utf-8').read().splitlines()
        except OSError:
            lines = []
        # headings, and list items that lead with a bold name
        names = [l.lstrip('#') for l in lines if re.match(r'#+ ', l)]
        names += [m.group(1) for l in lines
                  for m in [re.match(r'\s*(?:[-*]|[0-9]+\.)\s+\*\*(.+?)\*\*', l)] if m]
        heads[doc] = [re.sub(r'\s+', ' ', n.strip().replace('`', '')).lower() for n in names]
    return heads[doc]
bad = 0
for path in sys.argv[1:]:
    try:
        text = open(path, encoding='utf-8', errors='replace').read()
    except OSError:
        continue
    joined = ' '.join(re.sub(r'^\s*(/\*+|\*+/?|//|#+|>)?\s?', '', l) for l in text.splitlines())
    for m in re.finditer(r'(docs/[A-Za-z0-9_-]+\.md)[,:]?\s*\(?"([^"]{2,200})"', joined):
        doc, name = m.group(1), re.sub(r'\s+', ' ', m.group(2).replace('`', '')).strip().lower()
        if not os.path.exists(doc):
            continue  # reported above as a dangling reference
        if not any(h.startswith(name) for h in headings(doc)):
            print(f'{path}: cites {doc}, "{m.group(2)}": no heading starts so')
            bad = 1
sys.exit(bad)
PYEOF
exit $bad
