#!/bin/bash
# Compares two builds of dlc on the LeafNetwork step benchmarks, in alternating rounds
# (ABBA order, so that neither build always runs first), and prints each build's median
# samples/s and their ratio. For changes that must not make the compiled steps slower.
#
#   bench/compare-builds.sh OLD_BUILD_DIR NEW_BUILD_DIR [rounds]
#
# e.g. the commit before a change:
#   git worktree add /tmp/old HEAD~1
#   cmake -G Ninja -S /tmp/old -B /tmp/old/build -DCMAKE_BUILD_TYPE=Release \
#     -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DDLC_ENABLE_TESTS=OFF
#   ninja -C /tmp/old/build dlc-bench-leafnet dlc-bench-trainstep
#   bench/compare-builds.sh /tmp/old/build build 16
set -euo pipefail
old=${1:?old build directory}
new=${2:?new build directory}
rounds=${3:-16}
for dir in "$old" "$new"; do
  for bin in dlc-bench-leafnet dlc-bench-trainstep; do
    [ -x "$dir/bin/$bin" ] || { echo "compare-builds: $dir/bin/$bin is missing (build it first)" >&2; exit 2; }
  done
done
samples() { # build dir, benchmark
  case $2 in
    hybrid) "$1/bin/dlc-bench-leafnet" --only=leafnet_step_hybrid 32 ;;
    trainstep) "$1/bin/dlc-bench-trainstep" 32 10 train_step ;;
  esac 2>/dev/null | sed -n 's/.*"samples_per_s": \([0-9.]*\).*/\1/p'
}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) = 0 ]; then order="old new"; else order="new old"; fi
  for bench in hybrid trainstep; do
    for which in $order; do
      dir=$old; [ "$which" = new ] && dir=$new
      echo "$bench $which $(samples "$dir" "$bench")" >> "$results"
    done
  done
  echo "round $round/$rounds done" >&2
done
python3 - "$results" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    bench, which, value = line.split()
    runs[(bench, which)].append(float(value))
print("| step | old samples/s | new samples/s | new/old |")
print("|---|---|---|---|")
for bench in ("hybrid", "trainstep"):
    old, new = statistics.median(runs[(bench, "old")]), statistics.median(runs[(bench, "new")])
    print(f"| {bench} | {old:.1f} | {new:.1f} | {new / old:.3f} |")
PY
