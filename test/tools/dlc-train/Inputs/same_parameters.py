"""Compares two safetensors files of float32 parameters: the same names and shapes, and
values within a tolerance. Standard library only.

usage: same_parameters.py A.safetensors B.safetensors TOLERANCE
"""
import array
import json
import struct
import sys


def load(path):
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    base = 8 + size
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            sys.exit(f"{path}: {name} is {entry['dtype']}, expected F32")
        begin, end = entry["data_offsets"]
        values = array.array("f")
        values.frombytes(blob[base + begin:base + end])
        tensors[name] = (entry["shape"], values)
    return tensors


def main():
    first, second, tolerance = sys.argv[1], sys.argv[2], float(sys.argv[3])
    a, b = load(first), load(second)
    if sorted(a) != sorted(b):
        sys.exit(f"different parameters: {sorted(a)} vs {sorted(b)}")
    worst, where = 0.0, None
    for name in a:
        if a[name][0] != b[name][0]:
            sys.exit(f"{name}: shape {a[name][0]} vs {b[name][0]}")
        for x, y in zip(a[name][1], b[name][1]):
            difference = abs(x - y)
            if difference != difference:
                sys.exit(f"{name}: NaN ({x} vs {y})")
            if difference > worst:
                worst, where = difference, name
    if worst > tolerance:
        sys.exit(f"{where}: differs by {worst} (tolerance {tolerance})")
    print(f"same parameters: {len(a)} tensors, largest difference {worst:g}")


main()
