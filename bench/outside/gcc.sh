# SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
gcc -O1 -o gen /tmp/sweep/progs/gen.c && ./gen; echo "rc $?"; rm -f gen
