#!/usr/bin/env bash
# The shim's threads must never fault on the program's memory: the agent's
# fault could wait for the budget, that is for the batch it is to answer,
# and the program would hang (seen: a JVM under --memory 29M, once in six
# runs, its agent blocked in sscanf() while parsing /proc/self/maps).
# glibc's scanf family, strto*() and ato*() read the locale's data, which
# setlocale() puts in the program's heap: the shim parses with
# shim_parse_num() instead. This checks that libuswap_preload.so imports
# none of them.
# usage: run_shim_imports.sh LIBUSWAP_PRELOAD
set -uo pipefail
lib=$1
syms=$(nm -D --undefined-only "$lib" | awk '{print $NF}' | sed 's/@.*//') || exit 1
[ -n "$syms" ] || { echo "FAIL: no imports read from $lib"; exit 1; }
bad=$(grep -E '^(__isoc99_)?v?[fs]?scanf$|^(__)?strto[a-z]*(_l|_internal)?$|^ato(i|l|ll|f)$' <<<"$syms")
if [ -n "$bad" ]; then
	echo "FAIL: $lib imports functions that read the locale's data:" $bad
	exit 1
fi
echo "ok: $(wc -l <<<"$syms") imports, none of the scanf, strto or ato families"
