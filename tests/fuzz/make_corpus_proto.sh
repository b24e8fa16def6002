#!/usr/bin/env bash
# Regenerate the seeds of tests/fuzz/corpus/proto/ (see fuzz_proto.c): a
# configuration byte, then operations, one helper below per operation.
# Each seed is a scenario of the supervisor's protocol; libFuzzer's own
# finds may be added to the directory beside them.
# Usage: bash make_corpus_proto.sh
set -euo pipefail
shopt -s inherit_errexit
out=$(cd "$(dirname "$0")" && pwd)/corpus/proto
mkdir -p "$out"
rm -f "$out"/seed_*

# Bytes, little-endian.
b() { for v in "$@"; do printf '%02x' $((v & 255)); done; }
le16() { b $(($1)) $(($1 >> 8)); }
le32() { le16 $(($1 & 0xffff)); le16 $(($1 >> 16 & 0xffff)); }
le64() { le32 $(($1 & 0xffffffff)); le32 $(($1 >> 32 & 0xffffffff)); }

# The configuration byte: policy fifo (1), budget 64/32/128/512 (2 bits),
# slack 256 (8), the shim's start: RT_AGENT_UP and RT_REG of the region (16).
START=$((16))

# Operations; T is the target nibble (0: the base session; 8..15: a
# session made by a hello).
T=0
raw() { b $((T << 4 | 0)); le16 "$1"; b "$2"; printf '%s' "${3:-}"; }	# size, type sel, hex payload
evict() { b $((T << 4 | 1)) "$1"; }						# pages
answer() { b $((T << 4 | 2)) "$@"; }	# mode, count, a selector per slot (7: then 4 bytes)
reg() { b $((T << 4 | 3)) "$1"; printf '%s' "$2"; }				# sel, addresses...
addr() { b "$1"; le16 "$2"; [ $# -gt 2 ] && printf '%s' "$3"; true; }	# base sel, pages, [more]
hello() { b 4 "$1" "$2" "$3"; printf '%s' "${4:-}"; }				# type, flags, nfds, fields+fds
stat() { b 5; }
log() { b $((T << 4 | 6)) 0 "$1" "${#2}"; printf '%s' "$2" | od -An -tx1 | tr -d ' \n'; }
simple() { b $((T << 4 | 7)) "$1"; }	# 0 AGENT_UP, 1 PREFORK, 2 POSTFORK, 3 KICK, 4-6 not the shim's
turn() { b 8; }
uffd() { b $((T << 4 | 9)) "$1"; }
touch() { b 10; le16 "$1"; b 0; le16 0; b "$2"; }		# page, flags (1 write, 2 read now)
dontneed() { b 11; le16 "$1"; b $(($2 - 1)); le16 0; b "$3"; }	# page, pages, flags
unmap() { b 12; le16 "$1"; b $(($2 - 1)); le16 0; b "$3"; }
# page, pages, to, flags (1 MREMAP_DONTUNMAP, 2 read at once)
remap() { b 13; le16 "$1"; b $(($2 - 1)); le16 "$3"; b "$4"; }
hangup() { b $((T << 4 | 14)) 0; }
loop() { b 14 255; }							# a turn by poll()
agent() { b $((T << 4 | 15)) "$1"; }				# an honest round of @1 pages

seed() {	# seed NAME HEX...
	local name=$1
	shift
	local hex
	hex=$(printf '%s' "$*" | tr -d ' \t\n')
	printf "$(sed 's/../\\x&/g' <<<"$hex")" >"$out/seed_$name"
}

# The shim's start alone, and under each policy and budget.
seed start "$(b $START)"
seed start_fifo_32 "$(b $((START | 1 | 2)))"
seed start_512_slack "$(b $((START | 6 | 8)))"

# Eviction, honest: batches moved out, stored, touched back (swap-in and
# its sequential prefetch), evicted again.
seed evict_cycle "$(b $START) $(agent 64) $(turn) $(turn) $(agent 64) $(turn)
	$(touch 0 2) $(touch 1 2) $(touch 2 2) $(touch 4 2) $(turn) $(agent 32) $(turn)"
# Faults of never-touched pages: zero-fill runs, a write.
seed zero_fill "$(b $START) $(touch 128 2) $(touch 200 3) $(touch 129 2) $(turn) $(loop)"
# Faults over the budget: a batch sent by the fault itself, the fault waits.
seed over_budget "$(b $((START | 2))) $(touch 130 2) $(touch 150 2) $(touch 170 2)
	$(loop) $(agent 64) $(loop) $(turn) $(loop)"
# Events: REMOVE, UNMAP, REMAP (and with MREMAP_DONTUNMAP), with a batch out.
seed remove "$(b $START) $(dontneed 0 16 2) $(turn) $(touch 3 2)"
seed unmap "$(b $START) $(unmap 10 4 2) $(turn) $(touch 11 2)"
seed remap "$(b $START) $(remap 0 8 300 2) $(remap 20 4 400 3) $(turn) $(touch 300 2)"
seed evict_remap "$(b $START) $(evict 32) $(remap 0 64 256 2) $(agent 0) $(turn) $(turn)"
seed evict_remove "$(b $START) $(evict 64) $(dontneed 0 64 2) $(agent 0) $(turn) $(turn)"
seed evict_unmap_touch "$(b $START) $(evict 16) $(touch 3 0) $(unmap 0 8 2) $(agent 0) $(loop)"
# Answers that lie: every status, a wrong count, one never asked for.
seed answer_lies "$(b $START) $(evict 12) $(answer 32 0 1 2 3 4 5 6 7)$(le32 0x7fffffff)
	$(b 1 0 0 0 2)
	$(turn) $(turn) $(evict 8) $(answer 16 0 3 3 3 3 3 3 3 3) $(turn)"
seed answer_count "$(b $START) $(evict 8) $(answer 7 9 0 0 0 0 0 0 0 0 0) $(turn)"
seed answer_unasked "$(b $START) $(answer 0 3 1 1 1) $(evict 4) $(answer 8 0) $(answer 8 0)"
seed answer_moved_unmoved "$(b $START) $(evict 8) $(answer 0 0 3 3 3 3 0 0 0 0) $(turn)
	$(touch 0 2) $(touch 5 2) $(turn)"
# A fork without fork events: every swapped page brought in first.
seed prefork "$(b $START) $(agent 64) $(turn) $(turn) $(simple 1) $(loop) $(loop)
	$(simple 2) $(turn)"
# Registrations: out of order, unaligned, beyond user space, the staging
# area, a range wider than the process.
seed reg_bad "$(b $START) $(reg 1 "$(addr 0 8)$(addr 0 0)") $(T=0; reg 0 "$(addr 8 0 07)$(le16 4)")"
seed reg_top "$(b $START) $(reg 0 "$(addr 5 -1)$(le16 1)")"
seed reg_wide "$(b $START) $(reg 1 "$(addr 4 1)$(addr 5 -1)") $(agent 64) $(turn)"
seed reg_staging "$(b $START) $(reg 0 "$(addr 2 0)$(le16 63)") $(agent 64) $(turn)"
seed reg_twice "$(b $START) $(reg 0 "$(addr 1 0)$(le16 255)") $(reg 0 "$(addr 0 -2)$(le16 3)")
	$(touch 260 2) $(turn)"
# Messages of the wrong size or type, an empty one (read as a hang-up).
seed raw "$(b $START) $(raw 24 1 "$(le32 3)$(le32 0)$(le64 0)$(le64 4096)") $(raw 8 11)
	$(raw 776 3) $(raw 8 9) $(raw 4 1)"
seed raw_empty "$(b $START) $(evict 4) $(raw 0 0) $(turn) $(touch 130 2)"
seed log "$(b $START) $(log 20 'hello from the shim') $(log 250 $'\e[31mred\a')
	$(b 6 1) $(le32 0xffffffff) $(b 3) 414243"
seed simple "$(b $START) $(simple 3) $(simple 2) $(simple 4) $(simple 7) $(le32 99)"
# The move lock held by the agent: the uffd left unread, a kick, freed.
seed lock_held "$(b $START) $(uffd 2) $(touch 140 0) $(uffd 0) $(simple 3) $(uffd 1) $(turn)"
seed lock_want "$(b $START) $(uffd $((3 | 4 | 8))) $(touch 141 0) $(uffd 1) $(loop)"
# The uffd made blocking by the program.
seed uffd_blocking "$(b $START) $(uffd 16) $(touch 142 0) $(uffd 32) $(loop)"
# The agent's socket closed with a batch out: settled from pagemap.
seed hangup "$(b $START) $(evict 16) $(hangup) $(turn) $(touch 0 2) $(loop)"
# Reclaim ahead of demand under a small budget, fifo.
seed reclaim "$(b $((START | 1 | 2))) $(turn) $(agent 0) $(turn) $(agent 0) $(turn)"
# stat.
seed stat "$(b $START) $(agent 16) $(stat) $(turn) $(stat)"

# Hellos. Descriptor kinds: 0 memfd (size sel), 1 not sealable, 2 sealed
# against sealing, 3 against shrinking, 4 against writing, 5 a pipe,
# 6 /dev/null, 7 a uffd, 8 a non-blocking uffd, 9 a uffd after
# UFFDIO_API, 10 a memfd opened read-only.
UM="$(b 8 0 0 0)"		# a uffd and a memfd, as the shim sends them
seed hello "$(b $START) $(hello 0 0 2 "$UM") $(T=8; evict 4) $(T=8; simple 0)
	$(T=8; reg 0 "$(addr 0 0)$(le16 255)") $(T=8; agent 8) $(T=8; log 3 abc) $(stat)"
seed hello_fork "$(b $START) $(hello 3 0 1 "$(b 0 0)") $(hello 3 0 1 "$(b 0 0)")
	$(hello 3 0 0) $(hello 4 0 2 "$(b 0 0 0 0)")"
seed hello_fds "$(b $START) $(hello 0 0 2 "$(b 7 0 0 0)") $(hello 0 0 2 "$(b 9 0 0 0)")
	$(hello 0 0 2 "$(b 8 0 1 0)") $(hello 0 0 2 "$(b 8 0 0 1)") $(hello 0 0 2 "$(b 8 0 2 0)")
	$(hello 0 0 2 "$(b 8 0 3 0)") $(hello 0 0 2 "$(b 8 0 4 0)") $(hello 0 0 2 "$(b 8 0 5 0)")
	$(hello 0 0 2 "$(b 8 0 6 0)") $(hello 0 0 2 "$(b 8 0 10 0)") $(hello 0 0 3 "$UM$(b 0 0)")
	$(hello 0 0 1 "$(b 8 0)") $(hello 0 0 0) $(hello 0 0 5 "$UM$UM$(b 6 0)")
	$(hello 0 64 2 "$UM") $(hello 0 0 2 "$(b 8 0 0 1)")"
seed hello_sizes "$(b $START) $(hello 0 0 2 "$(b 8 0 0 2)") $(hello 0 0 2 "$(b 8 0 0 3)")
	$(hello 0 0 2 "$(b 8 0 0 4)") $(hello 0 0 2 "$(b 8 0 0 5)") $(hello 0 0 2 "$(b 8 0 0 6)")
	$(hello 0 0 2 "$(b 8 0 0 7)")"
seed hello_fields "$(b $START) $(hello 0 1 2 "$(le64 0x1001)$UM")
	$(hello 0 1 2 "$(le64 0)$UM") $(hello 0 1 2 "$(le64 0x7fffffffe000)$UM")
	$(hello 0 2 2 "$(le64 4096)$UM") $(hello 0 4 2 "$(le64 64)$UM")
	$(hello 0 8 2 "$(b 16)$UM") $(hello 0 8 2 "$(b 40)$UM") $(hello 0 128 2 "$(le32 1)$UM")
	$(hello 0 16 2 "$UM") $(hello 0 32 2 "$UM") $(hello 6 0 2 "$UM") $(hello 7 0 0 "$(le32 77)")"
seed hello_many "$(b $START) $(for i in 1 2 3 4 5 6 7 8 9 10; do hello 0 0 2 "$UM"; done)
	$(T=9; evict 8) $(T=12; hangup) $(turn) $(loop)"
seed hello_orphan "$(b $START) $(hello 0 32 2 "$UM") $(T=8; simple 0) $(loop) $(T=8; evict 2)"
ls "$out" | wc -l
