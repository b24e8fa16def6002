#!/usr/bin/env bash
# uswap inspect --design: on a sparse 1 TiB swap file, the old design's
# static metadata is exactly its per-slot arrays more than the swap
# table's (swap_map 1 byte, swap_cgroup 2 bytes, zeromap 1 bit per slot),
# measured on real swapons of the file; the table design's is at most 0.1
# byte per slot (the kernel after phase IV: 0.094); the top-level
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
assert tm["static_bytes_per_slot"] <= 0.1, tm
assert lm["swap_cgroup_bytes"] == 2 * slots and tm["swap_cgroup_bytes"] == 0, (tm, lm)
assert lm["zeromap_bytes"] == (slots + 63) // 64 * 8 and tm["zeromap_bytes"] == 0, (tm, lm)
assert lm["static_bytes"] - tm["static_bytes"] == \
    slots + lm["swap_cgroup_bytes"] + lm["zeromap_bytes"], (tm, lm)
assert tm["static_bytes"] == tm["cluster_array_bytes"] == t["static_metadata_bytes"], tm
for r in (t, l):
    assert r["static_metadata_bytes"] == r["metadata"]["static_bytes"], \
        (r["design"], r["static_metadata_bytes"], r["metadata"])
assert "design" not in n and "metadata" not in n, n
assert n["static_metadata_bytes"] == tm["static_bytes"], (n, tm)
for text, m in zip(sys.argv[4:6], (tm, lm)):
    got = re.search(r"^  static metadata: +(\d+) bytes$", text, re.M)
    assert got and int(got.group(1)) == m["static_bytes"], (text, m)
print("1 TiB: table static %d B (%.4f B/slot), legacy static %d B (%.4f B/slot)"
      % (tm["static_bytes"], tm["static_bytes_per_slot"], lm["static_bytes"],
         lm["static_bytes_per_slot"]))
PY
