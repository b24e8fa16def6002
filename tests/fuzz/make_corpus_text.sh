#!/usr/bin/env bash
# Seed tests/fuzz/corpus/spec/ and tests/fuzz/corpus/cli/ with hand-written
# inputs (file names say what each is). spec: a byte of error buffer length,
# then the text (fuzz_spec.c). cli: a byte choosing the command (0 run,
# 1 stat, 2 bench, 3 inspect, 4 mkswap), then NUL-separated arguments
# (fuzz_cli.c). Usage: bash make_corpus_text.sh
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)/corpus
mkdir -p "$dir/spec" "$dir/cli"

spec() {	# spec NAME TEXT
	{ printf '\xff'; printf '%s' "$2"; } >"$dir/spec/$1"
}
spec zram_1g 'zram:1G'
spec zram_zstd 'zram:16MiB:zstd'
spec zram_lz4_bytes 'zram:40960:lz4'
spec zram_small 'zram:36864'
spec zram_unaligned 'zram:4097'
spec zram_too_large 'zram:18446744073709551616'
spec zram_overflow_mult 'zram:17179869184T'
spec zram_bad_algo 'zram:1G:lzo'
spec zram_kb 'zram:64KB'
spec file_plain 'file:/tmp/swapfile'
spec file_rot 'file:/tmp/swapfile,rotational=1'
spec file_rot_only 'file:,rotational=0'
spec file_empty 'file:'
spec nbd_tcp 'nbd://localhost:10809/export'
spec nbd_badport 'nbd://host:10a/x'
spec nbd_ipv6 'nbd://[::1]:10809/x'
spec nbd_unix 'nbd+unix:///export?socket=/tmp/nbd.sock'
spec nbd_unix_nosock 'nbd+unix:///export?socket='
spec fault_nth 'fault:read_err=3:zram:1M'
spec fault_slot 'fault:read_err_slot=7:nbd://h/e'
spec fault_file 'fault:read_err=1:file:/x'
spec fault_zero 'fault:read_err=0:zram:1M'
spec file_options 'file:/tmp/swapfile,rotational=0,encrypt=xchacha20,discard=off'
spec file_encrypt_bad 'file:/tmp/swapfile,encrypt=rot13'
spec file_comma_path 'file:/tmp/a,b,encrypt'
spec nbds_psk 'nbds://user@host/export?tls-psk-file=/k,encrypt=aes256gcm'
spec nbds_unix 'nbds+unix:///e?socket=/s,discard=on'
spec fault_write 'fault:write_err=2:nbd://h/e,encrypt=off'
spec unknown 'swap:1G'
spec count_digits '18446744073709551615'
spec size_suffix_t '16777215TiB'
printf '\x05zram:1X' >"$dir/spec/short_errbuf"
printf '\x01file:' >"$dir/spec/errbuf_one"
printf '\x00zram:' >"$dir/spec/errbuf_zero"

cli() {	# cli NAME CMD-BYTE ARG...
	local name=$1 cmd=$2 first=1
	shift 2
	{
		printf "\\x0$cmd"
		for a in "$@"; do
			((first)) || printf '\0'
			first=0
			printf '%s' "$a"
		done
	} >"$dir/cli/$name"
}
cli run_full 0 --memory 64M --swap zram:1G --swap file:/x,prio=5 --design legacy \
	--memory-total 1G --evict fifo --poll-us 50 --stats -v --no-fork-events -- prog arg
cli run_json 0 --json=/tmp/out.json -S prog
cli run_short_group 0 -Svm 2M prog
cli run_bad_memory 0 --memory 512K prog
cli run_no_program 0 --memory 1G
cli run_help 0 --help
cli run_bad_poll 0 --poll-us 10001 prog
cli stat_json 1 --json 1234
cli stat_bad 1 0
cli bench_full 2 --workload random --swap zram:1G --memory 64M --size 1G --threads 2 \
	--procs 3 --runs 4 --seed 7 --seconds 0.5 --design both --json --csv --plot x.svg --quiet -- --write-pct 5
cli bench_swapio 2 --workload swapio --design legacy
cli bench_seconds_hex 2 --seconds 0x10
cli bench_unknown 2 --workload nope
cli inspect_json 3 --json --design table /tmp/swapfile
cli inspect_two 3 a b
cli mkswap_full 4 -f -L label -U clear --badpages 1,2,3 /tmp/f 1M
cli mkswap_group 4 -fL0123456789abcdefgh /tmp/f
cli mkswap_uuid 4 -U 00112233-4455-6677-8899-aabbccddeeff /tmp/f
cli mkswap_bad_list 4 --badpages 1,,2 /tmp/f
cli mkswap_bad_uuid 4 --uuid xyz /tmp/f
cli mkswap_bad_group 4 -fxq /tmp/f
ls "$dir/spec" | wc -l
ls "$dir/cli" | wc -l
