#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sweep.sh LIST [configs...]: config = frac:design:swap (frac 3 -> 1/3 of native maxrss)
list=$1; shift
cfgs=("$@"); [ ${#cfgs[@]} -eq 0 ] && cfgs=(3:table:default 3:legacy:file:/tmp/sw.img 8:table:default)
while IFS='|' read -r name cmd; do
	[ -z "$name" ] && continue
	if [ ! -f r/$name/native.rc ]; then ./h.sh $name native - - 600 -- $cmd; fi
	rss=$(tail -1 r/$name/native.maxrss | grep -o '^[0-9]*')
	for c in "${cfgs[@]}"; do
		frac=${c%%:*}; rest=${c#*:}; design=${rest%%:*}; swap=${rest#*:}
		mb=$(( rss / 1024 / frac )); [ $mb -lt 4 ] && mb=4
		./h.sh $name ${mb}M $design $swap 300 -- $cmd
	done
done < $list
