#!/usr/bin/env python3
"""Checks that the repository's documents and comments refer only to files it holds.

    scripts/check-doc-references.py [SOURCE_ROOT]

A newcomer has only the repository: a design note, README or comment that points at a
file kept elsewhere, or at one since renamed or deleted, sends them nowhere. Checked, in
every document and every comment under the root (build trees and git-ignored folders
excepted):

- markdown links `[text](target)` with a relative target, resolved against the file;
- paths starting with one of the repository's top-level entries (`lib/...`,
  `docs/design/...`, `scripts/...`), with `{a,b}` alternatives and `*` globs, resolved
  against the root;
- file names ending in `.md`: the file must exist somewhere in the repository.

Paths the project generates (those matched by `.gitignore`: `build/`, `dlc-train-out/`,
...) are not required to exist. The exit status is 1 when a reference is broken; each is
printed as FILE:LINE: 'reference'.
"""
import fnmatch
import itertools
import os
import re
import sys

TEXT_SUFFIXES = {".md", ".cpp", ".h", ".cu", ".cuh", ".td", ".txt", ".cmake", ".py", ".sh",
                 ".mlir", ".cfg", ".in", ".test"}
TEXT_NAMES = {"run", "dlc.sh", ".gitignore"}
SKIP_DIRS = {".git", "__pycache__"}
# Outside documents only comments are read: code names paths of its own (include dirs).
COMMENT_MARKERS = {".cpp": "//", ".h": "//", ".cu": "//", ".cuh": "//", ".td": "//",
                   ".mlir": "//", ".txt": "#", ".cmake": "#", ".py": "#", ".sh": "#",
                   ".cfg": "#", ".in": "#", ".test": "#"}


def ignore_patterns(root):
    """The .gitignore patterns, as (pattern, anchored) pairs without trailing slashes."""
    patterns = []
    try:
        with open(os.path.join(root, ".gitignore")) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#") and not line.startswith("!"):
                    patterns.append((line.strip("/"), line.startswith("/")))
    except FileNotFoundError:
        pass
    return patterns


def is_ignored(relpath, patterns):
    parts = relpath.strip("/").split("/")
    for pattern, anchored in patterns:
        if anchored:
            candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        else:
            candidates = parts
        if any(fnmatch.fnmatch(c, pattern) for c in candidates):
            return True
    return False


def expand_braces(path):
    """'x/{a,b}.cpp' -> ['x/a.cpp', 'x/b.cpp'] (any number of brace groups)."""
    pieces = re.split(r"\{([^{}]*)\}", path)
    literal, groups = pieces[0::2], [g.split(",") for g in pieces[1::2]]
    return ["".join(itertools.chain.from_iterable(zip(literal, choice + ("",))))
            for choice in itertools.product(*groups)]


def exists(root, relpath):
    import glob
    for candidate in expand_braces(relpath):
        full = os.path.join(root, candidate)
        if not (glob.glob(full) if "*" in candidate else os.path.exists(full)):
            return False
    return True


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    patterns = ignore_patterns(root)
    files, names = [], set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and
                             not is_ignored(os.path.normpath(os.path.join(rel_dir, d)),
                                            patterns))
        for name in filenames:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if is_ignored(rel, patterns):
                continue
            names.add(name)
            if os.path.splitext(name)[1] in TEXT_SUFFIXES or name in TEXT_NAMES:
                files.append(rel)
    top = sorted({p.split(os.sep)[0] for p in files} |
                 {d for d in os.listdir(root) if d not in SKIP_DIRS}, key=len, reverse=True)
    top_dirs = "|".join(re.escape(t) for t in top if os.path.isdir(os.path.join(root, t)))
    top_path = re.compile(r"(?<![\w./$}{@%-])((?:" + top_dirs + r")/[\w./*{},+-]*)")
    md_name = re.compile(r"(?<![\w./-])([\w./-]*[\w-]\.md)\b")
    link = re.compile(r"\]\(([^)\s]+)\)")

    broken = []
    for rel in sorted(files):
        with open(os.path.join(root, rel), errors="replace") as f:
            lines = f.read().splitlines()
        base = os.path.dirname(rel)
        suffix = os.path.splitext(rel)[1]
        marker = COMMENT_MARKERS.get(suffix, "" if suffix == ".md" else "#")
        in_docstring = False
        for number, line in enumerate(lines, 1):
            if suffix == ".py" and line.count('"""') % 2 == 1:
                in_docstring = not in_docstring
            if marker and not (in_docstring or '"""' in line):
                if marker not in line:
                    continue
                line = line[line.index(marker):]
            refs = []
            if rel.endswith(".md"):
                for target in link.findall(line):
                    target = target.split("#")[0]
                    if target and not re.match(r"^[a-z]+:", target):
                        refs.append((os.path.normpath(os.path.join(base, target)), target))
            for path in top_path.findall(line):
                path = path.rstrip(".,:;")
                if path and not path.endswith("/*"):
                    refs.append((path.rstrip("/"), path))
            for name in md_name.findall(line):
                if "/" in name:
                    continue  # a path: checked above when it starts at the root
                if name not in names:
                    broken.append((rel, number, name))
            for relpath, shown in refs:
                if not is_ignored(relpath, patterns) and not exists(root, relpath):
                    broken.append((rel, number, shown))
    for rel, number, shown in broken:
        print(f"{rel}:{number}: '{shown}' is not in the repository")
    if broken:
        print(f"{len(broken)} reference(s) to files the repository does not hold")
        return 1
    print(f"checked {len(files)} files: every reference resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
