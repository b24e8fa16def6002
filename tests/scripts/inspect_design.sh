#!/usr/bin/env bash
# uswap inspect --design: on a sparse 1 TiB swap file, the old design's
# static metadata is exactly one byte per slot more than the swap table's
# (the swap_map), measured on real swapons of the file; the top-level
# static_metadata_bytes (and the text report's "static metadata") is the
# chosen design's figure, and without --design the swap table's.
set -euo pipefail
uswap=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
f=$dir/tera
"$uswap" mkswap "$f" 1T >/dev/null 2>&1 || { echo "cannot make a 1 TiB sparse file here"; exit 77; }
chmod 600 "$f"
t=$("$uswap" inspect --json --design table "$f")
l=$("$uswap" inspect --json --design legacy "$f")
n=$("$uswap" inspect --json "$f")
tt=$("$uswap" inspect --design table "$f")
lt=$("$uswap" inspect --design legacy "$f")
python3 - "$t" "$l" "$n" "$tt" "$lt" <<'PY'
import json, re, sys
t, l, n = (json.loads(a) for a in sys.argv[1:4])
slots = t["last_page"] + 1
assert t["valid"] and l["valid"], (t, l)
assert t["design"] == "table" and l["design"] == "legacy"
tm, lm = t["metadata"], l["metadata"]
assert tm["swap_map_bytes"] == 0, tm
assert lm["swap_map_bytes"] == slots, lm
assert lm["static_bytes"] - tm["static_bytes"] == slots, (tm, lm)
assert tm["static_bytes"] == tm["cluster_array_bytes"] == t["static_metadata_bytes"], tm
for r in (t, l):
    assert r["static_metadata_bytes"] == r["metadata"]["static_bytes"], \
        (r["design"], r["static_metadata_bytes"], r["metadata"])
assert "design" not in n and "metadata" not in n, n
assert n["static_metadata_bytes"] == tm["static_bytes"], (n, tm)
for text, m in zip(sys.argv[4:6], (tm, lm)):
    got = re.search(r"^  static metadata: +(\d+) bytes$", text, re.M)
    assert got and int(got.group(1)) == m["static_bytes"], (text, m)
assert tm["kernel_also_per_slot"]["swap_cgroup_bytes"] == 2 * slots
print("1 TiB: table static %d B, legacy static %d B: %d B = 1 B x %d slots more"
      % (tm["static_bytes"], lm["static_bytes"], lm["static_bytes"] - tm["static_bytes"], slots))
PY
