#!/usr/bin/env python3
"""Prints the PTX of the first `gpu.binary` object in an MLIR module read from stdin.

The pipeline keeps PTX as the object's `assembly` string, in MLIR's escaped form (\\XX
for a byte in hex, \\\\ and \\" for themselves); this undoes the escaping so that ptxas
can read it. Exits non-zero when the module has no such string.
"""
import re
import sys

text = sys.stdin.read()
match = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', text)
if not match:
    sys.exit("extract-ptx: no gpu.binary object with an assembly string in the input")
escaped, out, i = match.group(1), bytearray(), 0
while i < len(escaped):
    if escaped[i] == "\\":
        pair = escaped[i + 1:i + 3]
        if re.fullmatch(r"[0-9A-Fa-f]{2}", pair):
            out.append(int(pair, 16))
            i += 3
            continue
        out += escaped[i + 1].encode()
        i += 2
        continue
    out += escaped[i].encode()
    i += 1
sys.stdout.buffer.write(out.rstrip(b"\0"))
