#!/bin/sh
# SPDX-License-Identifier: MIT
# tools.sh NAME: one of the everyday tools the sweep runs on the 52 MiB
# text /tmp/sweep/progs/data.txt (setup.sh makes it), its output reduced
# to one line that a wrong byte anywhere would change.
set -e
d=/tmp/sweep/progs
case $1 in
xz)	xz -6 -T2 -c $d/data.txt | md5sum ;;			# two threads, 94 MiB windows
zstd)	zstd -q -19 --long=26 -T2 -c $d/data.txt | md5sum ;;	# a 64 MiB window
sort)	sort -S 100M $d/data.txt | md5sum ;;			# an in-memory sort of 52 MiB
bc)	echo "2^900000 % 1000007" | BC_LINE_LENGTH=0 bc ;;	# big-number arithmetic
tcl)	tclsh $d/big.tcl ;;					# a list of 400,000 strings, sorted
*)	echo "tools.sh: unknown tool $1" >&2; exit 2 ;;
esac
