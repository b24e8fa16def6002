# SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
cp -r /tmp/sweep/progs/mk ./mkw && make -C mkw -s clean && make -C mkw -s -j2 && ./mkw/prog; echo "rc $?"; md5sum mkw/*.o | sort | md5sum; rm -rf mkw
