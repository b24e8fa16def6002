# SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
use strict; use Digest::MD5 qw(md5_hex);
my %h; for my $i (0..700000) { $h{"key$i"} = "val" . ($i * 3) x 3; }
my @kids;
for my $c (0..2) {
  my $pid = fork(); die unless defined $pid;
  if ($pid == 0) { my $s = ""; for (my $i = $c; $i < 700000; $i += 50) { $s .= $h{"key$i"}; $h{"key$i"} = "changed"; } print "child $c ", md5_hex($s), "\n"; exit($c + 1); }
  waitpid($pid, 0); print "exit ", $? >> 8, "\n";
}
my $s = 0; $s += length($h{"key$_"}) for (0..700000); print "parent $s\n";
