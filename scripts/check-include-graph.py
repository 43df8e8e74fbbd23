#!/usr/bin/env python3
"""Fails when the compiler's libraries include each other in a cycle.

The layers are the runtime (include/dlc/Runtime, lib/Runtime: no MLIR), the dialect and
its passes (include/dlc/Dialect, lib/Dialect), the lowering into runtime programs
(include/dlc/Conversion, lib/Conversion) and the compiler that drives them
(include/dlc/Compiler, lib/Compiler). The runtime includes none of the others; the
lowering may include the dialect and the runtime, the compiler any of them; but the
dialect must include neither the lowering nor the compiler: a pass that needs the
lowering makes the two one library in all but name.

KNOWN lists the edges that still close a cycle, each with the work that removes it; the
check fails on any other cycle, and on a KNOWN edge that is gone (so the list shrinks).

Usage: check-include-graph.py SOURCE_ROOT
"""
import os
import re
import sys

LAYERS = {
    "Runtime": ("include/dlc/Runtime", "lib/Runtime"),
    "Dialect": ("include/dlc/Dialect", "lib/Dialect"),
    "Conversion": ("include/dlc/Conversion", "lib/Conversion"),
    "Compiler": ("include/dlc/Compiler", "lib/Compiler"),
}

# (file, included header): why it is still there.
KNOWN = {}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    for layer, roots in LAYERS.items():
        if any(path == root or path.startswith(root + "/") for root in roots):
            return layer
    return None


def edges(root):
    found = []
    for layer, roots in LAYERS.items():
        for top in roots:
            for directory, _, files in os.walk(os.path.join(root, top)):
                for name in files:
                    if not name.endswith((".h", ".cpp", ".cu", ".cuh", ".inc")):
                        continue
                    path = os.path.relpath(os.path.join(directory, name), root)
                    with open(os.path.join(root, path), errors="replace") as stream:
                        for line in stream:
                            match = INCLUDE.match(line)
                            if not match:
                                continue
                            header = match.group(1)
                            target = layer_of("include/" + header) if header.startswith("dlc/") \
                                else layer_of(os.path.normpath(os.path.join(os.path.dirname(path), header)))
                            if target and target != layer:
                                found.append((layer, target, path, header))
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    found = edges(root)
    graph = {}
    for source, target, path, header in found:
        if (path, header) not in KNOWN:
            graph.setdefault(source, set()).add(target)

    def reaches(start, goal, seen=()):
        return any(nxt == goal or (nxt not in seen and reaches(nxt, goal, seen + (nxt,)))
                   for nxt in graph.get(start, ()))

    failures = []
    for source, target, path, header in found:
        if (path, header) not in KNOWN and reaches(target, source):
            failures.append("%s includes %s: %s -> %s closes a cycle" % (path, header, source, target))
    present = {(path, header) for _, _, path, header in found}
    for edge, why in KNOWN.items():
        if edge not in present:
            failures.append("%s no longer includes %s: remove it from KNOWN in %s" %
                            (edge[0], edge[1], os.path.basename(__file__)))
        else:
            print("known, to remove: %s includes %s (%s)" % (edge[0], edge[1], why))
    layers = sorted({(s, t) for s, t, _, _ in found})
    print("layer edges: " + ", ".join("%s -> %s" % edge for edge in layers))
    for failure in failures:
        print("error: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
