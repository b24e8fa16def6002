#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_tree.sh's rules can fail: a small tree that breaks each one once is
# refused with each reason named, and the same tree mended passes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cd "$t"
git init -q .
git config user.email t@example.invalid
git config user.name t
mkdir -p docs src/swap src/mm include/uswap
cat >docs/GUIDE.md <<'MD'
# Guide
## Issue 12: the allocator
## Figures (branch alloc3)
## Against kernel swap (2026-12-04, 18:29 UTC)
## Cold pages
- **Bold lead.** A list item a comment may cite.
MD
cat >src/swap/table.c <<'C'
/* The slots (rtfork2), measured 2026-12-04; issue 13's target. */
/* docs/GUIDE.md, "Cold pages" and docs/GUIDE.md, "Bold lead" exist;
 * docs/GUIDE.md, "Warm
 * pages" does not. */
/* 3.6 us each on this PVM guest */
C
echo '/* one */' >src/swap/lru.c
echo '/* two */' >src/mm/lru.c
git add -A
git commit -qm "a tree that breaks every rule"
out=$(bash "$here/check_tree.sh" "$t" 2>&1) && { echo "check_tree passed a broken tree:"; echo "$out"; exit 1; }
bad=0
for want in 'docs/GUIDE.md:2:## Issue 12' 'docs/GUIDE.md:3:## Figures (branch alloc3)' \
	    'docs/GUIDE.md:4:## Against kernel swap (2026' 'src/swap/table.c:1:' \
	    'PVM guest' 'two source files named lru.c' 'cites docs/GUIDE.md, "Warm pages"'; do
	grep -qF "$want" <<<"$out" || { echo "not reported: $want"; bad=1; }
done
for unwanted in '"Cold pages": no heading' '"Bold lead": no heading' 'docs/GUIDE.md:5:'; do
	grep -qF "$unwanted" <<<"$out" && { echo "reported wrongly: $unwanted"; bad=1; }
done
[ $bad = 0 ] || { echo "$out"; exit 1; }

# Mended, it passes.
cat >docs/GUIDE.md <<'MD'
# Guide
## The allocator
## Figures
## Against kernel swap
## Cold pages
## Warm pages
- **Bold lead.** A list item a comment may cite.
MD
sed -i -e 's/ (rtfork2), measured 2026-12-04; issue 13.s target/; the target/' \
       -e 's/3.6 us each on this PVM guest/a cost per page/' src/swap/table.c
git mv src/mm/lru.c src/mm/vmscan_lru.c
git commit -qam "mended"
out=$(bash "$here/check_tree.sh" "$t" 2>&1) || { echo "check_tree refused a mended tree:"; echo "$out"; exit 1; }
echo "check_tree_rules: every rule refused its break, the mended tree passed"
