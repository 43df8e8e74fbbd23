#!/usr/bin/env bash
# scripts/fuzz.sh - builds dlc's libFuzzer targets (fuzz/) with clang, AddressSanitizer
# and UndefinedBehaviorSanitizer, and runs each from its seed corpus.
#
#   scripts/fuzz.sh [--seconds N | --runs N] [--build-dir DIR] [TARGET ...]
#
#   --seconds N   fuzz each target for N seconds (default 30: CI's short run)
#   --runs N      or for N executions each (the long runs: --runs 1000000)
#   TARGET        safetensors, idx, image, mlir, compile, model (default: all)
#
# The build (default build-fuzz) uses clang-19 with its OpenMP runtime, libomp (which
# also serves oneDNN's libgomp calls), -O1, no CUDA; this script installs them when
# missing. New inputs libFuzzer finds go to DIR/corpus/<target> (the committed seeds in
# fuzz/corpus/<target> are read, never written); a crash leaves its input in
# DIR/findings/<target>/ and fails the run. The last line per target gives executions,
# time and corpus size.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$root/build-fuzz"
seconds=30
runs=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; runs=""; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    safetensors|idx|image|mlir|compile|model|onnx) targets+=("$1"); shift ;;
    *) echo "fuzz: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(safetensors idx image mlir compile model onnx)
started=$SECONDS
say() { printf '[fuzz %4ds] %s\n' "$((SECONDS - started))" "$*"; }

packages=(clang-19 libclang-rt-19-dev libomp-19-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing: ${missing[*]}"
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
say "configuring $build_dir (clang-19 -O1; fuzzer-no-link, address, undefined; no CUDA)"
mkdir -p "$build_dir"
cmake -G Ninja -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DDLC_SANITIZE=fuzzer-no-link,address,undefined -DDLC_ENABLE_CUDA=OFF -DDLC_ENABLE_PYTHON=OFF \
  -DDLC_ENABLE_MPI=OFF \
  -DDLC_ENABLE_TESTS=OFF -DDLC_FUZZ=ON >"$build_dir/configure.log" 2>&1 ||
  { tail -20 "$build_dir/configure.log"; exit 1; }
say "building ${targets[*]}"
cmake --build "$build_dir" ${DLC_JOBS:+-j "$DLC_JOBS"} --target "${targets[@]/#/dlc-fuzz-}"

# allow_user_poisoning=0: LLVM's allocators poison and unpoison their slabs in inline
# code, which runs instrumented in dlc's objects and uninstrumented inside libMLIR, so
# a slab one side poisoned reads as poisoned to the other (a false use-after-poison).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:allow_user_poisoning=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
for target in "${targets[@]}"; do
  corpus="$build_dir/corpus/$target" findings="$build_dir/findings/$target"
  mkdir -p "$corpus" "$findings"
  budget=(-max_total_time="$seconds")
  [ -z "$runs" ] || budget=(-runs="$runs")
  seeds=("$root/fuzz/corpus/$target")
  # dlc-compile's modules are MLIR too: the compile target also starts from the lit IR.
  [ "$target" != compile ] || seeds+=("$root/fuzz/corpus/mlir")
  # ONNX models: the one-node models of ONNX's backend tests (libonnx-testdata, which
  # dlc.sh installs), copied out of their folders of reference data, and the committed
  # inputs earlier runs found.
  if [ "$target" = onnx ]; then
    seeds=("$build_dir/seeds/onnx" "$root/fuzz/corpus/onnx")
    mkdir -p "${seeds[0]}"
    for model in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
      [ -e "$model" ] && cp "$model" "${seeds[0]}/$(basename "$(dirname "$model")").onnx"
    done
  fi
  say "$target: $([ -n "$runs" ] && echo "$runs runs" || echo "$seconds s") from ${seeds[*]#"$root/"}"
  before="$(ls "$findings")"
  if "$build_dir/fuzz/dlc-fuzz-$target" "${budget[@]}" -timeout=20 -rss_limit_mb=3072 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" \
      "$corpus" "${seeds[@]}" >"$build_dir/fuzz-$target.log" 2>&1; then
    # The run ended well, so any input it left was left by a child process: the one that
    # reads bytecode (compile target) died on it, as dlc contains it; libFuzzer's own
    # handlers in that child wrote it. They go to contained/, counted, not findings/.
    contained="$build_dir/contained/$target"
    mkdir -p "$contained"
    left=0
    for name in $(ls "$findings"); do
      if ! grep -qxF "$name" <<<"$before"; then
        mv "$findings/$name" "$contained/"
        left=$((left + 1))
      fi
    done
    say "$target: clean: $(grep -E '^stat::number_of_executed_units' "$build_dir/fuzz-$target.log" |
      tail -1 | awk '{print $2}') executions in $(grep -oE 'Done [0-9]+ runs in [0-9]+ second' \
      "$build_dir/fuzz-$target.log" | tail -1 | awk '{print $5}') s, corpus $(ls "$corpus" | wc -l) new inputs$(
      [ "$left" -eq 0 ] || echo "; $left inputs killed the child process that reads bytecode (contained, in $contained)")"
  else
    status=1
    say "$target: FAILED (log $build_dir/fuzz-$target.log; inputs in $findings):"
    grep -E 'ERROR|SUMMARY|runtime error|uncaught|==[0-9]+==' "$build_dir/fuzz-$target.log" | head -15
  fi
done
exit "$status"
