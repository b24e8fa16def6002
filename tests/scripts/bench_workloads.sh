#!/usr/bin/env bash
# The mm workloads of uswap bench (usemem, bgsave, build, random), each run
# briefly on zram with --json: every page read back as written
# (bad_pages 0), no failed access, no leaked slot, real swapping (swapouts
# and swapins > 0), and the JSON keys the docs promise.
# Usage: bash bench_workloads.sh /path/to/uswap
set -uo pipefail

USWAP=${1:?usage: bench_workloads.sh /path/to/uswap}
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP: python3 not found (needed to parse the JSON)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
seed=${USWAP_TEST_SEED:-12345}

# run NAME KEYS... -- ARGS...: one workload, its JSON checked (workload
# options follow a second --).
run() {
	local name=$1 keys=() out=$tmp/$1.json err=$tmp/$1.err rc
	shift
	while [ "$1" != "--" ]; do keys+=("$1"); shift; done
	shift
	timeout 60 "$USWAP" bench --workload "$name" --design table --swap zram:256M --memory 32M \
		--seed "$seed" --json "$@" >"$out" 2>"$err"
	rc=$?
	if ! python3 - "$name" "$rc" "$out" "${keys[@]}" <<'EOF'
import json, sys
name, rc, path, keys = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
try:
    with open(path) as f:
        d = json.load(f)
except Exception as e:
    print(f"FAIL: {name}: no JSON object ({e}), exit {rc}")
    sys.exit(1)
bad = []
common = ["workload", "design", "bad_pages", "swapins", "swapouts", "major_faults",
          "access_errors", "leaked_slots", "elapsed_s"]
for k in common + keys:
    if k not in d:
        bad.append(f"key '{k}' missing")
if d.get("workload") != name:
    bad.append(f"workload is {d.get('workload')!r}")
if d.get("design") != "table":
    bad.append(f"design is {d.get('design')!r}")
if d.get("bad_pages", 1) != 0:
    bad.append(f"bad_pages = {d.get('bad_pages')}")
for k in ("access_errors", "leaked_slots"):
    if d.get(k, 1) != 0:
        bad.append(f"{k} = {d.get(k)}")
for k in ("swapouts", "swapins"):
    if not d.get(k, 0) > 0:
        bad.append(f"{k} = {d.get(k)} (no swapping)")
for k in keys:
    if k in d and not isinstance(d[k], (int, float)):
        bad.append(f"{k} is not a number")
if rc != 0:
    bad.append(f"exit status {rc}")
if bad:
    print(f"FAIL: {name} (seed {d.get('seed')}): " + "; ".join(bad))
    sys.exit(1)
print(f"ok: {name}: swapouts {d['swapouts']} swapins {d['swapins']} " +
      " ".join(f"{k} {d[k]:.6g}" for k in keys))
EOF
	then
		fails=$((fails + 1))
		sed 's/^/    /' "$err" | head -20
	fi
}

run usemem throughput_mb_per_s proc_mb_per_s_median -- --procs 2
run bgsave parent_ops_per_s child_mb_per_s parent_ops_per_s_before fork_ms -- --seconds 0.3
run bgsave parent_ops_per_s child_mb_per_s parent_ops_per_s_before -- --seconds 0.3 -- --nofork
run build jobs_per_s forks exits -- --seconds 1 --threads 2
run bgsave parent_ops_per_s child_mb_per_s -- --seconds 0.3 --threads 2
run sharedfault faults_per_s fault_p50_us fault_p99_us rounds -- --seconds 0.3 --threads 3
run random ops_per_s major_faults_per_op -- --seconds 0.5 -- --write-pct 30
run random ops_per_s major_faults_per_op -- --threads 2 -- --ops 20000 --max-order 4

# zram's memory counted against the budget: still every page right.
run usemem throughput_mb_per_s zram_peak_bytes -- --size 40M --procs 1 -- --zram-charge

# Two runs: medians with min/max.
out=$tmp/runs.json
if "$USWAP" bench --workload usemem --design table --swap zram:256M --memory 16M --seed "$seed" \
	--runs 2 --json >"$out" 2>"$tmp/runs.err" &&
   python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["runs"] == 2 and "throughput_mb_per_s_min" in d and "throughput_mb_per_s_max" in d else 1)' "$out"; then
	echo "ok: usemem --runs 2 reports min/max"
else
	echo "FAIL: usemem --runs 2"; cat "$out" "$tmp/runs.err"
	fails=$((fails + 1))
fi

# A bad option and a bad spec are refused with a reason, not run.
if "$USWAP" bench --workload random --json --swap zram:xx >/dev/null 2>"$tmp/e1"; then
	echo "FAIL: a bad spec was accepted"; fails=$((fails + 1))
elif ! grep -q "zram" "$tmp/e1"; then
	echo "FAIL: no reason for a bad spec"; cat "$tmp/e1"; fails=$((fails + 1))
fi
if "$USWAP" bench --workload random --json -- --bogus 1 >/dev/null 2>"$tmp/e2"; then
	echo "FAIL: an unknown workload option was accepted"; fails=$((fails + 1))
fi
for m in nan inf -1 0 1e300 2x; do
	if "$USWAP" bench --workload random --json -- --multiple "$m" >/dev/null 2>"$tmp/e3"; then
		echo "FAIL: --multiple $m was accepted"; fails=$((fails + 1))
	fi
done

# Both designs in one process: five runs of each, figures and ratios.
if timeout 120 "$USWAP" bench --workload bgsave --design both --swap zram:256M --memory 16M \
	--seed "$seed" --json >"$tmp/both.json" 2>"$tmp/both.err"; then
	if ! python3 - "$tmp/both.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["design"] == "both" and d["runs"] >= 5, d
for design in ("table", "legacy"):
    f = d[design]
    assert f["bad_pages"]["max"] == 0, (design, f["bad_pages"])
    assert f["parent_ops_per_s"]["median"] > 0
    assert f["swapins"]["min"] > 0
assert d["legacy"]["bypass_swapins"]["median"] > 0
assert d["table"]["bypass_swapins"]["max"] == 0
r = d["ratio"]["parent_ops_per_s"]
assert r > 0
# Every ratio has a 95% interval that holds it (null only where the
# ratio has none: a figure that is 0 on legacy only).
ci = d["ratio_ci95"]
assert set(ci) == set(d["ratio"]), (set(ci) ^ set(d["ratio"]))
for k, q in d["ratio"].items():
    lo, hi = ci[k]
    if q is None:
        continue
    assert lo is not None and lo <= q, (k, q, lo, hi)
    assert hi is None or q <= hi, (k, q, lo, hi)
print("ok: bgsave both: parent_ops_per_s table/legacy %.3f [%s, %s]" %
      (r, ci["parent_ops_per_s"][0], ci["parent_ops_per_s"][1]))
EOF
	then
		fails=$((fails + 1))
	fi
else
	echo "FAIL: bgsave --design both"; head -20 "$tmp/both.err"; fails=$((fails + 1))
fi

# Readahead as the kernel does it, per VMA: the old design's bgsave reads
# ahead for the child's sequential pass (count 2 after the fork, so no
# bypass) and wastes almost none of it; the parent's random faults open no
# window. Per-address-space figures sum to at most the device's total.
if timeout 60 "$USWAP" bench --workload bgsave --design legacy --swap zram:256M --memory 32M \
	--seconds 0.3 --seed "$seed" --json >"$tmp/ra.json" 2>"$tmp/ra.err"; then
	if ! python3 - "$tmp/ra.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ra, wasted = d["readahead_pages"], d["readahead_wasted"]
assert ra > 0, d
assert wasted < 0.05 * ra, ("wasted", wasted, "of", ra)
assert d["child_readahead_pages"] + d["parent_readahead_pages"] <= ra, d
print("ok: bgsave legacy: readahead %d pages, %d wasted (child %d, parent %d)" %
      (ra, wasted, d["child_readahead_pages"], d["parent_readahead_pages"]))
EOF
	then
		fails=$((fails + 1))
	fi
else
	echo "FAIL: bgsave legacy readahead"; head -20 "$tmp/ra.err"; fails=$((fails + 1))
fi

# sharedfault on both designs: the same entries faulted by threads of one
# process and of forked ones; every page checked, on both designs.
if timeout 120 "$USWAP" bench --workload sharedfault --design both --seconds 0.2 \
	--seed "$seed" --json >"$tmp/sf.json" 2>"$tmp/sf.err"; then
	if ! python3 - "$tmp/sf.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for design in ("table", "legacy"):
    f = d[design]
    assert f["bad_pages"]["max"] == 0, (design, f["bad_pages"])
    assert f["faults_per_s"]["min"] > 0 and f["rounds"]["min"] > 0, (design, f)
    assert f["fault_p99_us"]["median"] >= f["fault_p50_us"]["median"] > 0, (design, f)
    assert f["swapins"]["min"] > 0, (design, f)
assert d["table"]["has_cache_retries"]["max"] == 0
print("ok: sharedfault both: faults/s table/legacy %.3f %s" %
      (d["ratio"]["faults_per_s"], d["ratio_ci95"]["faults_per_s"]))
EOF
	then
		fails=$((fails + 1))
	fi
else
	echo "FAIL: sharedfault --design both"; head -20 "$tmp/sf.err"; fails=$((fails + 1))
fi

# --plot draws the side-by-side chart with gnuplot; --csv one row per figure.
# The file is opened once, by uswap, and gnuplot writes to that descriptor:
# any name will do (a quote included), and an older, longer file there is
# rewritten whole.
if command -v gnuplot >/dev/null 2>&1; then
	plot="$tmp/p'q \$x.svg"
	head -c 300000 /dev/zero | tr '\0' J >"$plot"
	if timeout 120 "$USWAP" bench --workload usemem --design both --swap zram:256M --memory 16M \
		--seed "$seed" --csv --plot "$plot" >"$tmp/p.csv" 2>"$tmp/p.err" &&
	   grep -q '<svg' "$plot" && tail -c 200 "$plot" | grep -q '</svg>' && ! grep -q JJJ "$plot" &&
	   grep -q '^usemem,throughput_mb_per_s,legacy,' "$tmp/p.csv"; then
		echo "ok: --plot and --csv"
	else
		echo "FAIL: --plot/--csv"; head -5 "$tmp/p.err"; fails=$((fails + 1))
	fi
else
	echo "note: gnuplot not installed, --plot not checked"
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
echo "all bench workload checks passed"
