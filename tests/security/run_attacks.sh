#!/usr/bin/env bash
# The attacks on `uswap run` of docs/SECURITY.md, as a local user would
# make them against a root supervisor: each must fail, the program under
# the supervisor must read back every byte it wrote (sec_attack victim),
# and the supervisor must go on serving. The in-tree attacks are made by a
# process of the tree that connects as root and then becomes uid 64123
# (or the next free one) before it sends anything; the others by that
# user from outside.
#   probe        no uswap socket in /proc/net/unix (or ss -xlp) reachable
#   fake-pid     a hello naming a root process outside the tree
#   bad-memfd    an empty transfer memfd, and one that cannot be sealed
#   truncate     the shim's own transfer buffer truncated by the program
#   huge-reg     RT_REG of the whole address space (the supervisor stays quick)
#   bad-reg      inverted and unaligned ranges (the sender is killed)
#   blocking     a uffd made blocking (the sender is killed, no spin)
#   flood        5000 fork hellos from a root process of the tree, each on
#                a connection kept open (the supervisor's descriptors bounded)
#   staging      a staging area of 1 GiB, and an unaligned one
#   stat         `uswap stat` of a root program by the user; root's
#                `uswap stat` of a process whose environment names the
#                user's socket answering terminal escape sequences
# usage: run_attacks.sh USWAP SEC_ATTACK ATTACK; 77 when not root.
set -uo pipefail
uswap=${1:?usage: run_attacks.sh USWAP SEC_ATTACK ATTACK}
att_bin=${2:?}
attack=${3:?}

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (the supervisor runs as root)"
	exit 77
fi
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) not found"; exit 77; }

uid=64123	# sec_attack.c's ATTACK_UID: it must be free
if getent passwd "$uid" >/dev/null; then
	echo "SKIP: uid $uid is taken on this machine"
	exit 77
fi
as_user=(setpriv --reuid="$uid" --regid="$uid" --clear-groups --)
attacker() { "${as_user[@]}" "$@"; }	# not for `&`: $! would be a subshell's

top=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$top"
}
trap cleanup EXIT
chmod 0755 "$top"
att=$top/sec_attack
cp "$att_bin" "$att" && chmod 0755 "$att"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# start_run MEMORY_MB SHELL_SCRIPT: uswap run as root in the background;
# sup = its pid; its output in $top/out, $top/err.
start_run() {
	"$uswap" run --memory "$1"M -- sh -c "$2" >"$top/out" 2>"$top/err" &
	sup=$!
	pids+=("$sup")
	for _ in $(seq 200); do
		grep -qE "/$sup.sock|@uswap-run-$sup\$" /proc/net/unix && return 0	# (older: abstract)
		sleep 0.05
	done
	bad "the supervisor's socket never appeared"
}

# finish_run: wait for the run; it must exit 0 with the victim's data intact.
finish_run() {
	local rc
	wait "$sup"
	rc=$?
	cat "$top/out"
	grep -v '^  ' "$top/err"
	[ "$rc" -eq 0 ] || bad "uswap run exited $rc"
	grep -q "^victim: ok" "$top/out" || bad "the victim's data or service was hurt"
}

# sup_cpu_ms: the supervisor's CPU time so far.
sup_cpu_ms() {
	local f
	read -ra f <"/proc/$sup/stat"
	# fields 14, 15 (utime, stime) after a name without spaces ("uswap")
	echo $(( (f[13] + f[14]) * 1000 / $(getconf CLK_TCK) ))
}

victim="'$att' victim 40 6 3000"
case "$attack" in
probe)
	start_run 16 "$victim"
	sleep 0.5
	echo "--- /proc/net/unix, uswap sockets:"
	grep uswap /proc/net/unix
	attacker "$att" probe-sockets
	rc=$?
	[ "$rc" -eq 0 ] || bad "probe-sockets: a uswap socket was reachable (rc $rc)"
	if command -v ss >/dev/null; then
		echo "--- ss -xlp:"
		ss -xlp | grep -i uswap
		ss -xlp | grep -i uswap | grep -q '@' && bad "an abstract uswap socket is listening"
	fi
	dir=$(grep -o "/[^ ]*/$sup.sock" /proc/net/unix | head -1)
	dir=${dir%/*}
	perm=$(stat -c '%a %U' "$dir")
	echo "socket directory $dir: $perm"
	[ "$perm" = "700 root" ] || bad "socket directory $dir is $perm, not 700 root"
	finish_run
	;;
fake-pid)
	sleep 60 &
	vp=$!
	pids+=("$vp")
	start_run 16 "$victim & '$att' fake-pid $vp; echo attacker rc=\$?; wait"
	sleep 1.5
	links=$(ls -l "/proc/$sup/fd" 2>/dev/null | grep -c "/proc/$vp/")
	echo "the supervisor's descriptors on /proc/$vp/: $links"
	[ "$links" -eq 0 ] && ! grep -q "/proc/$vp/" <(ls -l "/proc/$sup/fd") ||
		bad "the supervisor opened the named process's files"
	finish_run
	grep -q "attacker rc=0" "$top/out" || bad "fake-pid was refused or failed"
	kill -0 "$vp" 2>/dev/null || bad "the root process named in the hello was killed"
	;;
bad-memfd)
	start_run 16 "$victim & '$att' bad-memfd; echo attacker rc=\$?; wait"
	finish_run
	grep -q "attacker rc=0" "$top/out" || bad "a bad transfer buffer was accepted"
	;;
truncate)
	start_run 16 "$victim & '$att' truncate-xfer; echo attacker rc=\$?; wait"
	finish_run
	grep -q "attacker rc=0" "$top/out" || bad "the transfer buffer could be truncated"
	;;
huge-reg)
	start_run 16 "$victim & '$att' huge-reg; echo attacker rc=\$?; wait"
	finish_run
	grep -q "attacker rc=0" "$top/out" || bad "huge-reg did not run"
	;;
bad-reg)
	start_run 16 "$victim & '$att' bad-reg; echo attacker rc=\$?; wait"
	finish_run
	grep -q "attacker rc=137" "$top/out" || bad "the sender of bad ranges was not killed"
	grep -q "broke the protocol" "$top/err" || bad "no message about the violation"
	;;
blocking)
	# A victim within its budget: the supervisor has nothing to do but
	# the attack, so its CPU time shows a spin.
	start_run 64 "'$att' victim 16 6 3000 & '$att' blocking-uffd; echo attacker rc=\$?; wait"
	sleep 1
	c0=$(sup_cpu_ms)
	sleep 3
	c1=$(sup_cpu_ms)
	echo "supervisor CPU over 3 s of the attack: $((c1 - c0)) ms"
	[ $((c1 - c0)) -lt 1500 ] || bad "the supervisor spun ($((c1 - c0)) ms of 3000)"
	finish_run
	grep -q "attacker rc=137" "$top/out" || bad "the sender of a blocking uffd was not killed"
	;;
flood)
	start_run 16 "$victim & '$att' hello-flood 5000; echo attacker rc=\$?; wait"
	for _ in $(seq 200); do
		grep -q "fork hellos sent" "$top/out" && break
		sleep 0.1
	done
	n=$(ls "/proc/$sup/fd" | wc -l)
	echo "the supervisor's descriptors after the flood: $n"
	[ "$n" -lt 200 ] || bad "the supervisor holds $n descriptors"
	finish_run
	grep -q "attacker rc=0" "$top/out" || bad "hello-flood did not run"
	;;
staging)
	start_run 16 "$victim & '$att' staging; echo attacker rc=\$?; wait"
	finish_run
	grep -q "attacker rc=0" "$top/out" || bad "a bad staging area was accepted"
	;;
stat)
	start_run 16 "$victim"
	sleep 0.5
	prog=$(pgrep -P "$sup" -f "victim" | head -1)
	echo "--- the user asks for a root program's counters (pid $prog):"
	attacker "$uswap" stat "$prog" >"$top/stat1" 2>&1
	rc=$?
	cat "$top/stat1"
	[ "$rc" -ne 0 ] || bad "the user's uswap stat succeeded"
	grep -q faults "$top/stat1" && bad "the user read the root program's counters"
	echo "--- root asks for the counters of the user's process naming the user's socket:"
	mkdir -m 0700 "$top/evil" && chown "$uid:$uid" "$top/evil"
	"${as_user[@]}" sh -c 'exec env USWAP_RUN_SOCK="$0/$$.sock" sleep 30' "$top/evil" &
	target=$!
	pids+=("$target")
	"${as_user[@]}" "$att" stat-server "$top/evil/$target.sock" &
	pids+=("$!")
	for _ in $(seq 100); do [ -S "$top/evil/$target.sock" ] && break; sleep 0.05; done
	for j in "" --json; do
		"$uswap" stat $j "$target" >"$top/stat2" 2>&1
		rc=$?
		od -c "$top/stat2" | head -5
		[ "$rc" -ne 0 ] || bad "root's uswap stat $j printed the user's answer"
		grep -q $'\x1b' "$top/stat2" && bad "root's uswap stat $j printed an escape sequence"
	done
	finish_run
	;;
*)
	echo "unknown attack $attack"
	exit 2
	;;
esac
[ "$fail" -eq 0 ] && echo "PASS: $attack"
exit "$fail"
