#!/usr/bin/env bash
# Install to a temporary prefix and build a C and a C++ program against the
# installed headers and uswap.pc, statically and dynamically.
set -euo pipefail
build=${1:-build}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
test -x "$prefix/bin/uswap"
cat >"$prefix/t.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <uswap/uswap.h>
int main(void)
{
	struct uswap_frame_pool *pool;
	struct folio *f;

	if (strcmp(uswap_version(), USWAP_VERSION_STRING))
		return 1;
	if (uswap_frame_pool_create(16, &pool))
		return 1;
	f = uswap_folio_alloc(pool, 2);
	if (!f || folio_nr_pages(f) != 4)
		return 1;
	folio_put(f);
	uswap_frame_pool_destroy(pool);
	puts("ok");
	return 0;
}
C
cc -std=c11 -Wall -Werror "$prefix/t.c" -o "$prefix/t" $(pkg-config --cflags --libs uswap)
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib/x86_64-linux-gnu" "$prefix/t"
cp "$prefix/t.c" "$prefix/t.cc"
c++ -Wall -Werror "$prefix/t.cc" -o "$prefix/tpp" $(pkg-config --cflags --libs uswap)
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib/x86_64-linux-gnu" "$prefix/tpp"
cc -std=c11 "$prefix/t.c" -o "$prefix/ts" $(pkg-config --cflags uswap) \
	"$(find "$prefix" -name libuswap.a)" $(pkg-config --static --libs uswap | sed 's/-luswap//')
"$prefix/ts"
# Only the API is exported from the shared library.
so=$(find "$prefix" -name 'libuswap.so.0' | head -1)
if nm -D --defined-only "$so" | awk '{print $3}' | grep -Ev '^(uswap_|folio_|swap_|swp_|__swap_|USWAP_)' ; then
	echo "unexpected exported symbols above"; exit 1
fi
# The manual: uswap(1), uswap(7), and a page for each exported function
# (unless the build made none: -DUSWAP_BUILD_MAN=OFF).
test -f "$prefix/share/man/man1/uswap.1"
test -f "$prefix/share/man/man7/uswap.7"
if [ -d "$build/man/man3" ]; then
	for s in $(nm -D --defined-only "$so" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }'); do
		if [ ! -f "$prefix/share/man/man3/$s.3" ]; then
			echo "no installed man page for $s"; exit 1
		fi
	done
fi
# The documented examples build against the installed package and run.
src=$(cd "$(dirname "$0")/.." && pwd)
for ex in "$src"/docs/examples/*.c; do
	cc -std=gnu11 -Wall -Werror "$ex" -o "$prefix/ex" $(pkg-config --cflags --libs uswap)
	LD_LIBRARY_PATH="$prefix/lib:$prefix/lib/x86_64-linux-gnu" "$prefix/ex"
done
echo "install check ok"
