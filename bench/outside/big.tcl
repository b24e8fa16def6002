# SPDX-License-Identifier: MIT
set l {}
for {set i 0} {$i < 400000} {incr i} { lappend l "item$i" }
set s 0
foreach x [lsort $l] { incr s [string length $x] }
puts $s
