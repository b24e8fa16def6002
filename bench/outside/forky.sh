# SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
x=""; for i in $(seq 1 2000); do x="$x $i"; done
declare -A A; for i in $(seq 1 20000); do A[k$i]=$((i*i)); done
s=0; for i in $(seq 1 300); do v=$(echo ${A[k$i]}); s=$((s + v)); done
echo $s
for i in $(seq 1 100); do ( echo $((i * 3)) ) ; done | md5sum
echo ${#A[@]} $(echo $x | wc -w)
