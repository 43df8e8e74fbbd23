"""Runs every dlc pass and pipeline over every .mlir file in the repository.

Usage: every_pass_on_every_input.py DLC_OPT SOURCE_ROOT [EXTRA_INPUT ...]

The passes are read from `DLC_OPT --help` (every flag that starts --dlc- or
--convert-dlc-), so a new pass is covered the day it is registered. Each runs with its
defaults, and the pipelines and option sets below run too, on every `.mlir` file under
the source root's test/ and examples/ (split at `// -----` as lit's tests are) and on the
extra inputs. A pass may accept an input or refuse it with a diagnostic (exit 1); a
signal, a stack dump, an LLVM fatal error or a sanitizer report is a failure, printed
with the command and the split chunk that caused it.
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

# Option sets beyond each pass's defaults: the two pipelines as hybridize() and
# dlc-compile run them, and the passes whose defaults skip most of their work.
VARIANTS = [
    ["--dlc-pipeline=cpu"],
    ["--dlc-pipeline=cuda"],
    ["--dlc-pipeline=cpu=1 generate-kernels=0 blocked-layouts=0"],
    ["--dlc-shard-data-parallel=devices=cpu:0,cpu:1"],
    ["--dlc-shard-data-parallel=devices=cpu:0 processes=2 sync-batch-norm=1"],
    ["--dlc-place-devices=default-device=gpu:0 allow-fallback=1"],
    ["--dlc-assign-layouts=layout=nChw8c"],
]

CRASH = re.compile(r"PLEASE submit a bug report|Stack dump:|LLVM ERROR|Assertion .* failed|"
                   r"Sanitizer|runtime error:|terminate called")
SOURCE_DIRS = ["test", "examples"]


def pass_flags(dlc_opt):
    help_text = subprocess.run([dlc_opt, "--help"], capture_output=True, text=True,
                               check=True).stdout
    flags = sorted(set(re.findall(r"^\s{4,8}(--(?:dlc|convert-dlc)-[a-z0-9-]+)\s", help_text,
                                  re.MULTILINE)))
    return [[flag] for flag in flags if flag != "--dlc-pipeline"]  # it needs a target


def inputs(root, extra):
    found = []
    for top in SOURCE_DIRS:
        for directory, _, files in os.walk(os.path.join(root, top)):
            found += [os.path.join(directory, f) for f in files if f.endswith(".mlir")]
    return sorted(set(found) | set(extra))


def chunks(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return re.split(r"^// -----\s*$", f.read(), flags=re.MULTILINE)


def run(dlc_opt, flags, path, split=True):
    command = [dlc_opt, "--allow-unregistered-dialect", *(["--split-input-file"] if split else []),
               *flags, path, "-o", os.devnull]
    result = subprocess.run(command, capture_output=True, text=True, errors="replace")
    crashed = result.returncode not in (0, 1) or CRASH.search(result.stderr)
    return command, result, crashed


def main():
    dlc_opt, root, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    runs = [(flags, path) for flags in pass_flags(dlc_opt) + VARIANTS
            for path in inputs(root, extra)]
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for command, result, crashed in pool.map(lambda r: run(dlc_opt, *r), runs):
            if crashed:
                failures.append((command, result))
    with tempfile.TemporaryDirectory() as scratch:
        for command, result in failures:
            flags, path = command[3:-3], command[-3]
            print(f"CRASH (exit {result.returncode}): {' '.join(command)}")
            # Name the chunk: each alone, without the split.
            for k, text in enumerate(chunks(path)):
                piece = os.path.join(scratch, f"chunk{k}.mlir")
                with open(piece, "w", encoding="utf-8") as f:
                    f.write(text)
                _, alone, crashed = run(dlc_opt, flags, piece, split=False)
                if crashed:
                    print(f"  chunk {k} of {path} (exit {alone.returncode}):")
                    print("    " + text.strip().replace("\n", "\n    ")[:1500])
                    print("  " + "\n  ".join(alone.stderr.splitlines()[:8]))
    passes = len(pass_flags(dlc_opt)) + len(VARIANTS)
    print(f"{len(runs)} runs: {passes} passes or option sets over {len(runs) // passes} files, "
          f"{len(failures)} crashed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
