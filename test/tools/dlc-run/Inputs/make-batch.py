"""Writes a float32 tensor 'data' of the given shape, filled with a fixed pattern, as a
safetensors file (header: 8-byte little-endian length, JSON; then the raw data), with
Python's standard library only. Usage: make-batch.py MODEL OUT DIM... (MODEL unused: it
documents which model the batch is for)."""
import json
import struct
import sys

out, shape = sys.argv[2], [int(d) for d in sys.argv[3:]]
count = 1
for d in shape:
    count *= d
values = [((i * 37) % 101) / 101.0 - 0.5 for i in range(count)]
data = struct.pack("<%df" % count, *values)
header = json.dumps({"data": {"dtype": "F32", "shape": shape, "data_offsets": [0, len(data)]}})
header += " " * ((8 - len(header) % 8) % 8)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(header)))
    f.write(header.encode())
    f.write(data)
