#!/usr/bin/env python3
"""Checks that every row of docs/errors.md names tests that exist.

    scripts/check-error-catalogue.py [SOURCE_ROOT]

Each table row of the catalogue ends with the tests that check it: GoogleTest tests
written `Suite.Name`, lit files under test/ with, in parentheses, the FileCheck
prefixes (or `expected-error`) that check the row, and pytest tests written
`python/tests/<file>.py::<test function>`. A row whose test was renamed or
deleted would promise a check that no longer runs; this script fails on such a row, on
a row that names no test, and on a lit file that has none of the prefixes given.
"""
import os
import re
import sys


def gtest_names(root):
    """Every Suite.Name defined with TEST, TEST_F or TEST_P under unittests/."""
    names = set()
    pattern = re.compile(r"\bTEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)")
    for folder, _, files in os.walk(os.path.join(root, "unittests")):
        for name in files:
            if name.endswith(".cpp"):
                with open(os.path.join(folder, name), errors="replace") as f:
                    names.update(f"{a}.{b}" for a, b in pattern.findall(f.read()))
    return names


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    catalogue = os.path.join(root, "docs", "errors.md")
    tests = gtest_names(root)
    problems, rows = [], 0
    with open(catalogue) as f:
        lines = f.read().splitlines()
    for number, line in enumerate(lines, 1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) < 3 or cells[0] in ("bad input", "---") or set(cells[0]) <= {"-"}:
            continue
        rows += 1
        checked_by = cells[-1]
        named = re.findall(r"`([A-Z]\w*\.[A-Z*]\w*\*?)`", checked_by)
        lit = re.findall(r"`(test/[^`]+\.(?:mlir|test))`(?:\s*\(([^)]*)\))?", checked_by)
        pytests = re.findall(r"`(python/tests/[\w/]+\.py)::(\w+)`", checked_by)
        if not named and not lit and not pytests:
            problems.append(f"{number}: the row names no test")
        for path, function in pytests:
            full = os.path.join(root, path)
            with open(full, errors="replace") if os.path.exists(full) else open(os.devnull) as f:
                if not re.search(r"^def " + re.escape(function) + r"\(", f.read(), re.MULTILINE):
                    problems.append(f"{number}: no test {function} in {path}")
        for name in named:
            suite, _, test = name.partition(".")
            if test.endswith("*"):
                if not any(t.startswith(f"{suite}.{test[:-1]}") for t in tests):
                    problems.append(f"{number}: no test matches {name}")
            elif name not in tests:
                problems.append(f"{number}: no test {name} in unittests/")
        for path, prefixes in lit:
            full = os.path.join(root, path)
            if not os.path.exists(full):
                problems.append(f"{number}: {path} does not exist")
                continue
            with open(full, errors="replace") as f:
                text = f.read()
            for prefix in re.findall(r"`([A-Za-z-]+)`", prefixes or ""):
                if prefix == "expected-error":
                    found = "expected-error" in text
                else:
                    found = re.search(r"//\s*" + re.escape(prefix) + r"(-[A-Z]+)?:", text)
                if not found:
                    problems.append(f"{number}: {path} has no {prefix} check")
    for problem in problems:
        print(f"docs/errors.md:{problem}")
    if problems:
        print(f"{len(problems)} row(s) of the error catalogue name tests that do not exist")
        return 1
    print(f"checked {rows} rows of docs/errors.md: every test they name exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
