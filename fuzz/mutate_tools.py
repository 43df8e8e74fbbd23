#!/usr/bin/env python3
"""Mutates MLIR files and runs dlc-opt and dlc-compile on each mutant, as processes.

    fuzz/mutate_tools.py BUILD_DIR [--runs N] [--seed S] [--keep DIR]

The libFuzzer targets run dlc's readers in-process, where a crash inside a child
process (bytecode is read in one) is invisible. This driver runs the tools themselves,
so it sees what a user sees: each mutant of the seeds (the repository's .mlir files, the
LeafNetwork export in fuzz/corpus/compile, and each as bytecode, written by dlc-opt)
goes through `dlc-opt FILE` and `dlc-compile FILE WEIGHTS -o OUT --function F` (F: the
first function the text names). Either tool may
refuse it (exit 1); a signal, a stack dump, an LLVM fatal error or a sanitizer report is
a finding (unless the tool says the child that read bytecode died: what that child
printed is what the tool contained), kept in --keep (default: build_dir/findings/tools). The last line gives the
runs, the refusals and the findings of each tool. Mutations: flipped, set, deleted and
duplicated bytes, truncation, spliced halves of two seeds.
"""
import argparse
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

FUNCTION = re.compile(rb"func\.func\s+(?:private\s+)?@([A-Za-z_][\w$.]*)")
CONTAINED = re.compile(rb"MLIR's bytecode reader (crashes on|failed on)")
CRASH = re.compile(rb"PLEASE submit a bug report|Stack dump:|LLVM ERROR|Sanitizer|"
                   rb"runtime error:|terminate called|double free")


def seeds(root, dlc_opt, scratch):
    texts = []
    for top in ("test", "examples", "fuzz/corpus/compile"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            texts += [os.path.join(folder, f) for f in files if f.endswith(".mlir")]
    found = []
    for k, path in enumerate(sorted(texts)):
        with open(path, "rb") as f:
            for chunk in re.split(rb"^// -----\s*$", f.read(), flags=re.MULTILINE):
                found.append(chunk)
                piece = os.path.join(scratch, f"seed{k}.mlir")
                with open(piece, "wb") as out:
                    out.write(chunk)
                result = subprocess.run([dlc_opt, "--allow-unregistered-dialect", piece,
                                         "--emit-bytecode"], capture_output=True)
                if result.returncode == 0:
                    found.append(result.stdout)
    return [s for s in found if s]


def mutate(rng, data, pool):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(6)
        at = rng.randrange(len(data)) if data else 0
        if kind == 0 and data:
            data[at] ^= 1 << rng.randrange(8)
        elif kind == 1 and data:
            data[at] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        elif kind == 2 and data:
            del data[at:at + rng.randint(1, 16)]
        elif kind == 3 and data:
            piece = data[at:at + rng.randint(1, 64)]
            data[at:at] = piece * rng.randint(1, 8)
        elif kind == 4 and data:
            del data[rng.randrange(len(data)):]
        else:
            other = rng.choice(pool)
            data = data[:at] + other[rng.randrange(len(other) + 1):]
    return bytes(data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build_dir")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dlc_opt = os.path.join(args.build_dir, "bin", "dlc-opt")
    dlc_compile = os.path.join(args.build_dir, "bin", "dlc-compile")
    keep = args.keep or os.path.join(args.build_dir, "findings", "tools")
    os.makedirs(keep, exist_ok=True)
    rng = random.Random(args.seed)
    # runs, refusals, findings, refusals after the child that reads bytecode died
    counts = {"dlc-opt": [0, 0, 0, 0], "dlc-compile": [0, 0, 0, 0]}
    with tempfile.TemporaryDirectory() as scratch:
        pool = seeds(root, dlc_opt, scratch)
        header = b'{"__metadata__": {}}'
        weights = os.path.join(scratch, "none.safetensors")
        with open(weights, "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header)
        for run in range(args.runs):
            mutant = mutate(rng, rng.choice(pool), pool)
            path = os.path.join(scratch, "mutant.mlir")
            with open(path, "wb") as f:
                f.write(mutant)
            # dlc-compile compiles the first function the text names (@forward for
            # bytecode), so that the lit tests' IR gets past the lookup.
            named = FUNCTION.search(mutant[:4096])
            function = named.group(1).decode("ascii", "replace") if named else "forward"
            for tool, command in (
                    ("dlc-opt", [dlc_opt, path, "-o", os.devnull]),
                    ("dlc-compile", [dlc_compile, path, weights, "-o",
                                     os.path.join(scratch, "out.dlc"),
                                     "--function", function])):
                try:
                    result = subprocess.run(command, capture_output=True, timeout=60)
                    # What the child that reads bytecode printed before it died is not
                    # the tool's: the tool's own line says it contained the crash.
                    contained = CONTAINED.search(result.stderr)
                    crashed = result.returncode not in (0, 1) or (
                        CRASH.search(result.stderr) and not contained)
                except subprocess.TimeoutExpired:
                    crashed, result, contained = True, None, None
                counts[tool][0] += 1
                if crashed:
                    counts[tool][2] += 1
                    name = os.path.join(keep, f"{tool}-{args.seed}-{run}.mlir")
                    with open(name, "wb") as f:
                        f.write(mutant)
                    print(f"FINDING: {tool} on {name}: "
                          f"{'timeout' if result is None else result.returncode}", flush=True)
                elif result.returncode != 0:
                    counts[tool][1] += 1
                    counts[tool][3] += 1 if contained else 0
            if (run + 1) % 500 == 0:
                print(f"{run + 1} mutants", flush=True)
    summary = "; ".join(f"{tool}: {c[0]} runs, {c[1]} refused ({c[3]} after the bytecode "
                        f"reader's process died), {c[2]} findings" for tool, c in counts.items())
    print(f"{len(pool)} seeds. {summary}")
    return 1 if any(c[2] for c in counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
