#!/usr/bin/env bash
# Data at rest (docs/RELIABILITY.md): what a swap device holds of a
# program's memory, during and after `uswap run`, on a file and on an NBD
# export (nbdkit serving a file, plain and over TLS), on both designs.
# rt_lru secret fills 6 MiB with "uswap-secret:N" text under a 2 MiB
# budget, waits while this script looks at the device, then reads every
# page back. Required:
#   - encrypt=off (the control: the test sees a secret when there is one):
#     copies on the device during the run; none after it (the freed
#     clusters are discarded: hole punched, NBD trim);
#   - encryption on (the default): no copy during or after; one byte
#     changed in one used slot during the run gives SIGBUS for exactly one
#     page, the one uswap run reports lost, and no wrong byte elsewhere;
#   - a second `uswap run` on a file in use is refused, and so is a file
#     other users can read;
#   - nbds:// works against nbdkit --tls=require, and nbd:// is refused there.
# usage: run_secret.sh USWAP RT_LRU
set -uo pipefail
uswap=$1 prog=$2
dir=$(mktemp -d)
nbdpid=
cleanup() {
	[ -n "$nbdpid" ] && kill "$nbdpid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

copies() { LC_ALL=C grep -a -o -F uswap-secret: "$1" | wc -l; }

# The middle one of the slots after the header that hold data (used
# slots: free ones are holes or were never written). Nearly all of them
# hold the program's secret pages, which it reads back; the few others
# (libc's, the stack) it may never read. Prints the slot number, 0: none.
used_slot() {
	python3 - "$1" <<'EOF'
import sys
used = []
with open(sys.argv[1], 'rb') as f:
    f.seek(4096)
    s = 1
    while True:
        b = f.read(4096)
        if len(b) < 4096:
            break
        if any(b):
            used.append(s)
        s += 1
print(used[len(used) // 2] if used else 0)
EOF
}

flip_byte() {	# FILE OFFSET
	python3 - "$1" "$2" <<'EOF'
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(int(sys.argv[2])); c = f.read(1)[0]
    f.seek(int(sys.argv[2])); f.write(bytes([c ^ 0x40]))
EOF
}

# one_run NAME SPEC FILE ENC DESIGN: the run described above, FILE being
# what holds the device's bytes.
one_run() {
	local name=$1 spec=$2 file=$3 enc=$4 design=$5 during after slot=0 rc got said i
	# The last run's output goes first: the job truncates it only once it
	# runs, and its "filled" would be read meanwhile.
	rm -f "$dir/go" "$dir/out" "$dir/err"
	"$uswap" run --memory 2M --design "$design" --swap "$spec" -- \
		"$prog" secret 6 "$dir/go" >"$dir/out" 2>"$dir/err" &
	local pid=$!
	for ((i = 0; i < 600; i++)); do
		grep -q '^filled' "$dir/out" 2>/dev/null && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	if ! grep -q '^filled' "$dir/out"; then
		bad "$name: the program never filled its memory"; cat "$dir/out" "$dir/err"
		kill $pid 2>/dev/null; wait $pid 2>/dev/null; return
	fi
	during=$(copies "$file")
	# The control: evicted pages reach the device when the mirror's reclaim
	# writes them, which a loaded machine delays; give it 10 s.
	for ((i = 0; i < 100 && during == 0; i++)); do
		[ "$enc" = off ] || break
		sleep 0.1
		during=$(copies "$file")
	done
	if [ "$enc" = on ]; then
		slot=$(used_slot "$file")
		[ "$slot" -gt 0 ] || bad "$name: no used slot on the device"
		flip_byte "$file" $((slot * 4096 + 1234))
		if [ "${file%/swap}" != "$file" ]; then	# a second run on the same file
			if timeout 20 "$uswap" run --memory 2M --swap "file:$file" -- true \
				>"$dir/out2" 2>&1; then
				bad "$name: a second uswap run on $file was not refused"
			elif ! grep -q 'in use by another process' "$dir/out2"; then
				bad "$name: second run: $(cat "$dir/out2")"
			fi
		fi
	fi
	touch "$dir/go"
	wait $pid
	rc=$?
	after=$(copies "$file")
	got=$(sed -n 's/^sigbus_at //p' "$dir/out" | sort -u)
	said=$(sed -n 's/.* page \(0x[0-9a-f]*\) lost to a device read error.*/\1/p' "$dir/err" | sort -u)
	echo "$name: copies during $during, after $after; $(tail -1 "$dir/out"); tampered slot $slot; reported lost: $(echo $said)"
	if [ "$enc" = off ]; then
		[ "$during" -gt 0 ] || bad "$name: the control found no secret on the device"
		[ "$after" = 0 ] || bad "$name: $after copies left after the run (not discarded)"
		[ $rc = 0 ] && grep -q '^sigbus_pages 0 wrong 0$' "$dir/out" ||
			{ bad "$name: exit $rc"; cat "$dir/err"; }
	else
		[ "$during" = 0 ] || bad "$name: $during copies on the device during the run"
		[ "$after" = 0 ] || bad "$name: $after copies on the device after the run"
		[ $rc = 0 ] && grep -q '^sigbus_pages 1 wrong 0$' "$dir/out" ||
			{ bad "$name: exit $rc (want one lost page, no wrong byte)"; cat "$dir/err"; }
		[ -n "$got" ] && [ "$got" = "$said" ] ||
			bad "$name: SIGBUS at [$got], reported lost [$said]"
	fi
}

# A swap file.
"$uswap" mkswap "$dir/swap" 16M >/dev/null || { echo "FAIL: mkswap"; exit 1; }
for design in table legacy; do
	one_run "file $design encrypt=off" "file:$dir/swap,encrypt=off" "$dir/swap" off $design
	one_run "file $design" "file:$dir/swap" "$dir/swap" on $design
done
chmod 644 "$dir/swap"
if "$uswap" run --memory 2M --swap "file:$dir/swap" -- true >"$dir/out2" 2>&1 ||
	! grep -q 'mode 0644 lets other users' "$dir/out2"; then
	bad "a swap file of mode 0644 was not refused: $(cat "$dir/out2")"
fi
chmod 600 "$dir/swap"

# An NBD export: nbdkit serving a file that carries a swap header.
if ! command -v nbdkit >/dev/null; then
	echo "FAIL: nbdkit is not installed (CI installs it)"; exit 1
fi
start_nbd() {	# nbdkit ARGS...: serve $dir/export on $dir/sock
	rm -f "$dir/sock"
	nbdkit -f -U "$dir/sock" "$@" file "$dir/export" 2>"$dir/nbdkit.err" &
	nbdpid=$!
	for ((i = 0; i < 100; i++)); do [ -S "$dir/sock" ] && return; sleep 0.05; done
	echo "FAIL: nbdkit did not start: $(cat "$dir/nbdkit.err")"; exit 1
}
stop_nbd() { kill "$nbdpid" 2>/dev/null; wait "$nbdpid" 2>/dev/null; nbdpid=; }

"$uswap" mkswap "$dir/export" 16M >/dev/null || { echo "FAIL: mkswap export"; exit 1; }
start_nbd
one_run "nbd table encrypt=off" "nbd+unix:///?socket=$dir/sock,encrypt=off" "$dir/export" off table
one_run "nbd table" "nbd+unix:///?socket=$dir/sock" "$dir/export" on table
stop_nbd

# TLS with a pre-shared key (the file format nbdkit and libnbd read:
# "USER:HEXKEY").
printf 'alice:%s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" >"$dir/psk"
chmod 600 "$dir/psk"
start_nbd --tls=require --tls-psk="$dir/psk"
if timeout 30 "$uswap" run --memory 2M --swap "nbd+unix:///?socket=$dir/sock" -- true \
	>"$dir/out2" 2>&1; then
	bad "nbd:// without TLS was accepted by a --tls=require server"
fi
one_run "nbds legacy" "nbds+unix://alice@/?socket=$dir/sock&tls-psk-file=$dir/psk" \
	"$dir/export" on legacy
stop_nbd
exit $fail
