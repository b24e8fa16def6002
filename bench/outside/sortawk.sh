# SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
awk 'BEGIN{for(i=0;i<1500000;i++) printf "%d %s %d\n", (i*7919)%1000003, "w" i%977, i}' > big.txt
sort -k1,1n -k3,3n -S 200M big.txt | md5sum
awk '{c[$2]+=$1; n[$2]++} END{for(k in c) print k, c[k], n[k]}' big.txt | sort | md5sum
sort -u -k2,2 big.txt | wc -l
rm -f big.txt
