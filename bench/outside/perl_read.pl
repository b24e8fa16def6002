# SPDX-License-Identifier: MIT (bench/outside: a thrashing reader)
# Fill a hash of N keys (default 200000), then read every key 3 times:
# under a budget below its size, every pass swaps the whole hash through.
use strict;
my $n = $ENV{N} // 200000;
my %h; for my $i (0..$n) { $h{"key$i"} = "val" . ($i * 3) x 3; }
for my $r (0..2) { my $s = 0; $s += length($h{"key$_"}) for (0..$n); print "pass $r $s\n"; }
