#!/usr/bin/env bash
# A layer includes only headers of its own layer or the layers below it:
#   util < io < swap, legacy < mm < workload < runtime < cli
# (runtime: the userfaultfd runtime of `uswap run`, docs/RUNTIME.md),
# except the runtime: it reads the layers below through their public
# headers (<uswap/...>) only, and includes util/ and runtime/ of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
allowed() {
	case "$1" in
	util) echo "util" ;;
	io) echo "util io" ;;
	swap) echo "util io swap" ;;
	legacy) echo "util io swap legacy" ;;
	mm) echo "util io swap legacy mm" ;;
	workload) echo "util io swap legacy mm workload" ;;
	runtime) echo "util runtime" ;;
	cli) echo "util io swap legacy mm workload runtime cli" ;;
	esac
}
bad=0
for dir in src/*/; do
	layer=$(basename "$dir")
	ok=$(allowed "$layer")
	[ -n "$ok" ] || continue
	while IFS=: read -r file _ inc; do
		dep=$(sed -E 's/.*#include "([a-z]+)\/.*/\1/' <<<"$inc")
		if ! grep -qw "$dep" <<<"$ok"; then
			echo "layer violation: $file includes $dep/ ($inc)"
			bad=1
		fi
	done < <(grep -rn '#include "[a-z]*/' "$dir" || true)
done
exit $bad
