#!/usr/bin/env bash
# uswap inspect --design: on a sparse 1 TiB swap file, the old design's
# static metadata is exactly one byte per slot more than the swap table's
# (the swap_map), measured on real swapons of the file.
set -euo pipefail
uswap=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
f=$dir/tera
"$uswap" mkswap "$f" 1T >/dev/null 2>&1 || { echo "cannot make a 1 TiB sparse file here"; exit 77; }
chmod 600 "$f"
t=$("$uswap" inspect --json --design table "$f")
l=$("$uswap" inspect --json --design legacy "$f")
python3 - "$t" "$l" <<'PY'
import json, sys
t, l = json.loads(sys.argv[1]), json.loads(sys.argv[2])
slots = t["last_page"] + 1
assert t["valid"] and l["valid"], (t, l)
assert t["design"] == "table" and l["design"] == "legacy"
tm, lm = t["metadata"], l["metadata"]
assert tm["swap_map_bytes"] == 0, tm
assert lm["swap_map_bytes"] == slots, lm
assert lm["static_bytes"] - tm["static_bytes"] == slots, (tm, lm)
assert tm["static_bytes"] == tm["cluster_array_bytes"] == t["static_metadata_bytes"], tm
assert tm["kernel_also_per_slot"]["swap_cgroup_bytes"] == 2 * slots
print("1 TiB: table static %d B, legacy static %d B: %d B = 1 B x %d slots more"
      % (tm["static_bytes"], lm["static_bytes"], lm["static_bytes"] - tm["static_bytes"], slots))
PY
