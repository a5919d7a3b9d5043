#!/usr/bin/env bash
# Regenerates the embedded PTX from the .cu sources (needs nvcc). Each .ptx
# starts with the sha256 of its source so that a test can tell a stale one.
set -euo pipefail
cd "$(dirname "$0")"
for cu in *.cu; do
	base=${cu%.cu}
	sum=$(sha256sum "$cu" | cut -d' ' -f1)
	nvcc -ptx -arch=compute_90 -o "$base.ptx.tmp" "$cu"
	{ echo "// carve-source: $cu sha256:$sum"; cat "$base.ptx.tmp"; } >"$base.ptx"
	rm -f "$base.ptx.tmp"
done
