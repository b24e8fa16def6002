#!/usr/bin/env bash
# Files and arguments of uswap as root runs it. An unprivileged attacker
# (a free uid through setpriv) prepares a sticky world-writable directory;
# root then runs the commands a review would run there:
#   (a) a symlink to a root file: mkswap LINK 16M and run --json LINK fail
#       and the root file keeps every byte (also a dangling link: its
#       target is not created);
#   (b) a hard link to the root file (made by root, as protected_hardlinks
#       may stop the attacker) and a file of the attacker's: refused;
#   (c) mkswap over an existing file that is not a swap area fails and
#       leaves it as it was, works with --force; over a swap area it works;
#   (d) bad sizes, counts and a --swap too long for the runtime: exit 2
#       with a message naming the option, and the program never runs.
# The script stops at the first failure (exit 1); 77 when not root or
# without setpriv.
# usage: run_files.sh USWAP
set -uo pipefail
uswap=${1:?usage: run_files.sh /path/to/uswap}

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (the victim commands run as root)"
	exit 77
fi
if ! command -v setpriv >/dev/null 2>&1; then
	echo "SKIP: setpriv (util-linux) not found: no unprivileged attacker"
	exit 77
fi

# A uid and gid that no account uses.
uid=64123
while getent passwd "$uid" >/dev/null || getent group "$uid" >/dev/null; do
	uid=$((uid + 1))
done
attacker() { setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$@"; }

top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT
chmod 0755 "$top"
secret=$top/secret		# root's, 0700: the files to protect
pub=$top/pub			# sticky, world-writable: the attacker's playground
mkdir -m 0700 "$secret"
mkdir "$pub"
chmod 1777 "$pub"
marker=$top/ran			# created by the program if uswap run started it

victim=$secret/victim
head -c 20000 /dev/urandom >"$victim"
printf 'root data, not a swap area\n' >>"$victim"
chmod 0644 "$victim"
cp -p "$victim" "$secret/victim.orig"

n=0
check() { n=$((n + 1)); echo "check $n: $*"; }
fail() { echo "FAIL: $*"; [ -s "$top/err" ] && sed 's/^/  stderr: /' "$top/err"; exit 1; }
victim_intact() {
	cmp -s "$victim" "$secret/victim.orig" || fail "the root file changed"
	[ "$(stat -c %s "$victim")" = "$(stat -c %s "$secret/victim.orig")" ] ||
		fail "the root file's size changed"
}
# refused WHAT WORD CMD...: CMD fails (exit 1 or more), its message has
# WORD, the root file and the marker are untouched.
refused() {
	local what=$1 word=$2 rc
	shift 2
	rm -f "$marker"
	"$@" >"$top/out" 2>"$top/err"
	rc=$?
	[ "$rc" -ne 0 ] || fail "$what: exit 0"
	grep -qi -- "$word" "$top/err" || fail "$what: exit $rc, no message with '$word'"
	[ -e "$marker" ] && fail "$what: the program ran"
	victim_intact
	echo "  ok: exit $rc: $(head -1 "$top/err")"
}
# usage_error WHAT OPTION ARGS...: uswap run ARGS -- touch MARKER exits 2
# with a message naming OPTION, and touch never runs.
usage_error() {
	local what=$1 opt=$2 rc
	shift 2
	rm -f "$marker"
	"$uswap" run "$@" -- touch "$marker" >"$top/out" 2>"$top/err"
	rc=$?
	[ "$rc" -eq 2 ] || fail "$what: exit $rc, want 2"
	grep -q -- "$opt" "$top/err" || fail "$what: no message naming $opt"
	[ -e "$marker" ] && fail "$what: the program ran"
	echo "  ok: $(head -c 160 "$top/err" | head -1)"
}
has_swap_signature() {
	[ "$(tail -c +4087 "$1" | head -c 10)" = SWAPSPACE2 ]
}

# (a) The attacker's symlinks.
attacker ln -s "$victim" "$pub/link" || fail "the attacker cannot make a symlink"
attacker ln -s "$secret/created" "$pub/dangling" || fail "the attacker cannot make a symlink"
[ "$(stat -c %u "$pub/link")" = "$uid" ] || fail "the symlink is not the attacker's"

check "mkswap through the attacker's symlink to a root file"
refused "mkswap LINK 16M" "symbolic link" "$uswap" mkswap "$pub/link" 16M
check "mkswap --force through the same symlink"
refused "mkswap --force LINK 16M" "symbolic link" "$uswap" mkswap --force "$pub/link" 16M
check "mkswap without SIZE through the same symlink"
refused "mkswap LINK" "symbolic link" "$uswap" mkswap "$pub/link"
check "run --json through the attacker's symlink to a root file"
refused "run --json LINK" "symbolic link" "$uswap" run --json "$pub/link" -- touch "$marker"
check "mkswap and run --json through a dangling symlink create nothing"
refused "mkswap DANGLING 16M" "symbolic link" "$uswap" mkswap "$pub/dangling" 16M
refused "run --json DANGLING" "symbolic link" "$uswap" run --json "$pub/dangling" -- touch "$marker"
[ -e "$secret/created" ] && fail "the dangling link's target was created"

# (b) A hard link to the root file, and a file of the attacker's.
ln "$victim" "$pub/hard" || fail "cannot make the hard link"
check "mkswap over a hard link to a root file"
refused "mkswap HARDLINK 16M" "hard link" "$uswap" mkswap "$pub/hard" 16M
check "mkswap without SIZE over the same hard link"
refused "mkswap HARDLINK" "hard link" "$uswap" mkswap "$pub/hard"
check "run --json into a hard link to a root file"
refused "run --json HARDLINK" "hard link" "$uswap" run --json "$pub/hard" -- touch "$marker"
rm -f "$pub/hard"
attacker sh -c "printf 'attacker data\n' >'$pub/theirs'" || fail "the attacker cannot write"
check "run --json into a file of the attacker's"
refused "run --json THEIRS" "uid $uid" "$uswap" run --json "$pub/theirs" -- touch "$marker"
[ "$(cat "$pub/theirs")" = "attacker data" ] || fail "the attacker's file changed"

# (c) mkswap over existing files.
data=$secret/data
cp "$secret/victim.orig" "$data"
check "mkswap over an existing file that is not a swap area"
refused "mkswap DATA 16M" "not a swap area" "$uswap" mkswap "$data" 16M
cmp -s "$data" "$secret/victim.orig" || fail "mkswap changed the data file"
refused "mkswap DATA" "not a swap area" "$uswap" mkswap "$data"
cmp -s "$data" "$secret/victim.orig" || fail "mkswap changed the data file"
check "mkswap --force over the same file"
"$uswap" mkswap --force "$data" 16M >"$top/out" 2>"$top/err" || fail "mkswap --force: exit $?"
has_swap_signature "$data" || fail "mkswap --force wrote no swap header"
[ "$(stat -c %s "$data")" = $((16 << 20)) ] || fail "mkswap --force: size $(stat -c %s "$data")"
echo "  ok: $(head -1 "$top/out")"
check "mkswap over an existing swap area, resized, without --force"
"$uswap" mkswap "$data" 32M >"$top/out" 2>"$top/err" || fail "mkswap over a swap area: exit $?"
has_swap_signature "$data" || fail "no swap header after mkswap over a swap area"
[ "$(stat -c %s "$data")" = $((32 << 20)) ] || fail "size $(stat -c %s "$data"), want 32M"
echo "  ok: $(head -1 "$top/out")"
check "mkswap creates a new file with mode 0600"
"$uswap" mkswap "$secret/new" 16M >"$top/out" 2>"$top/err" || fail "mkswap NEW 16M: exit $?"
[ "$(stat -c %a "$secret/new")" = 600 ] || fail "mode $(stat -c %a "$secret/new"), want 600"
has_swap_signature "$secret/new" || fail "no swap header in the new file"
echo "  ok"
check "run --json creates a new file with mode 0600 and writes it"
if "$uswap" run --memory 16M --json "$secret/new.json" -- true >"$top/out" 2>"$top/err"; then
	[ "$(stat -c %a "$secret/new.json")" = 600 ] ||
		fail "mode $(stat -c %a "$secret/new.json"), want 600"
	grep -q '"exit_status"' "$secret/new.json" || fail "no counters in the --json file"
	echo "  ok"
else
	# The runtime may be unable to start here (no userfaultfd); the
	# file is still the one made at start-up.
	[ "$(stat -c %a "$secret/new.json")" = 600 ] || fail "no 0600 --json file"
	echo "  ok (the runtime did not start here: $(head -1 "$top/err"))"
fi

# (d) Sizes, counts and lengths on the command line.
long=$(printf 'file:/%0594d' 0)
[ ${#long} -eq 600 ] || fail "the long spec is ${#long} characters"
check "run --memory -5M";			usage_error "--memory -5M" --memory --memory -5M
check "run --memory 99999999999999999999G";	usage_error "digits overflow" --memory --memory 99999999999999999999G
check "run --memory 18446744073709551615G";	usage_error "suffix overflow" --memory --memory 18446744073709551615G
check "run --memory ' 5M'";			usage_error "leading space" --memory --memory ' 5M'
check "run --memory 5Q";			usage_error "bad suffix" --memory --memory 5Q
check "run --memory 0x10M";			usage_error "hex" --memory --memory 0x10M
check "run --swap of 600 characters";		usage_error "long --swap" --swap --swap "$long"
check "run --memory-total -1M";			usage_error "--memory-total -1M" --memory-total --memory-total -1M
check "run --poll-us -1";			usage_error "--poll-us -1" --poll-us --poll-us -1
check "run --poll-us 18446744073709551617";	usage_error "--poll-us overflow" --poll-us --poll-us 18446744073709551617

victim_intact
echo "run_files: all $n checks passed"
