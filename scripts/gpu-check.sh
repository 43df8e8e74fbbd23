#!/usr/bin/env bash
# scripts/gpu-check.sh - the GPU check: build dlc for the GPU, run the GPU tests, time
# kernels and the LeafNetwork training step against PyTorch, print a short table.
#
#   scripts/gpu-check.sh [--out DIR] [--build-dir DIR] [--no-build] [--bundle FILE] [--arch SM]
#                        [--emulated]
#
#   --out DIR        where the logs go (default: $DLC_GPU_CHECK_OUT, else a new temporary
#                    folder); the last lines printed name it
#   --build-dir DIR  build tree (default: build-gpu); with --no-build, binaries are taken
#                    from DIR/bin as they are (built elsewhere and carried over)
#   --bundle FILE    run the programs packed by scripts/gpu-bundle.sh (no build): for a
#                    GPU machine without LLVM, MLIR or oneDNN
#   --arch SM        CUDA architecture (default 90: Hopper, H100/H200)
#   --emulated       a dry run on emulated GPUs (unittests/GPU/Emulator), no GPU needed:
#                    the same stages with the *-emulated programs of the build tree
#                    (default: build), batch 4, 5 training steps, no PyTorch column. Its times are the
#                    CPU's: what it shows is that every stage runs, before a GPU is lent.
#
# Each GPU test runs in its own process, so that a crash or a hang costs one test, not the
# rest. Stages are time-boxed so that the whole check stays under 7 minutes on an H200 with
# a warm build; the exit status is non-zero when a stage fails or no GPU is visible.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${DLC_GPU_CHECK_OUT:-}"
build_dir="$root/build-gpu"
build=1
bundle=""
arch=90
emulated=0
batch=32
steps=20 # timed training steps
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --build-dir) build_dir="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --bundle)
      [ -f "${2:-}" ] || { echo "gpu-check: --bundle: no file '${2:-}'" >&2; exit 2; }
      bundle="$(realpath "$2")"; build=0; shift 2 ;;
    --arch) arch="$2"; shift 2 ;;
    --emulated) emulated=1; build_dir="$root/build"; batch=4; steps=5; shift ;;
    *) echo "gpu-check: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out="$(mktemp -d -t dlc-gpu-check.XXXXXX)"
mkdir -p "$out"
# Generated kernels are compiled into a cache of the check's own (cold on the first run).
export DLC_CACHE_DIR="${DLC_CACHE_DIR:-$out/kernel-cache}"
started=$SECONDS
status=0
summary=()
say() { printf '[gpu-check %3ds] %s\n' "$((SECONDS - started))" "$*"; }
note() { summary+=("$*"); }

# --- 1. the machine ---------------------------------------------------------------
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader \
    >"$out/gpus.txt" 2>&1 || true
  say "GPUs: $(tr '\n' ';' <"$out/gpus.txt")"
else
  say "nvidia-smi not found"
fi

# --- 2. build ------------------------------------------------------------------------
suffix=""
if [ "$emulated" = 1 ]; then
  suffix="-emulated"
  export DLC_EMULATED_GPUS="${DLC_EMULATED_GPUS:-2}"
  say "EMULATED GPUs ($DLC_EMULATED_GPUS, on the CPU): a dry run of every stage; times are not a GPU's"
  if [ "$build" = 1 ]; then
    say "building the emulated programs in $build_dir; log: $out/build.log"
    if ! timeout 900 cmake --build "$build_dir" --target dlc-gpu-emulated-tests \
          dlc-bench-leafnet-emulated dlc-bench-trainstep-emulated >"$out/build.log" 2>&1; then
      say "build failed (last lines below; full log $out/build.log)"
      tail -20 "$out/build.log"
      exit 1
    fi
  fi
  build=0
fi
if [ "$build" = 1 ]; then
  say "building (Release, sm_$arch) in $build_dir; log: $out/build.log"
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                                           -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  if ! timeout 300 bash -c "cmake -G Ninja -S '$root' -B '$build_dir' -DCMAKE_BUILD_TYPE=Release \
        -DDLC_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=$arch ${launcher[*]} &&
      cmake --build '$build_dir' --target dlc-gpu-tests dlc-bench-leafnet dlc-bench-trainstep" \
      >"$out/build.log" 2>&1; then
    say "build failed (last lines below; full log $out/build.log)"
    tail -20 "$out/build.log"
    exit 1
  fi
fi
bin="$build_dir/bin"
if [ -n "$bundle" ]; then
  unpacked="$out/bundle"
  mkdir -p "$unpacked"
  say "unpacking $bundle"
  tar -C "$unpacked" -xJf "$bundle" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$bundle" "$unpacked" || { say "cannot unpack $bundle"; exit 1; }
  bin="$unpacked/bin"
  # cuDNN, cuBLAS and NCCL come from this machine: the system's, else the CUDA toolkit's,
  # else the pip packages beside PyTorch.
  libdirs="$unpacked/lib"
  for lib in libcudnn.so.9 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
    ldconfig -p 2>/dev/null | grep -q "$lib " && continue
    found=$(find /usr/local /opt /usr/lib -name "$lib" 2>/dev/null | head -1)
    if [ -n "$found" ]; then libdirs="$libdirs:$(dirname "$found")"
    else say "$lib not found on this machine"; fi
  done
  export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The bundle's libdevice, for the generated GPU kernels' PTX.
  [ -d "$unpacked/cuda" ] && export DLC_CUDA_TOOLKIT="${DLC_CUDA_TOOLKIT:-$unpacked/cuda}"
  say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  missing=$(ldd "$bin/dlc-gpu-tests" | grep 'not found' || true)
  [ -z "$missing" ] || { say "libraries missing: $missing"; exit 1; }
fi
gpu_tests="$bin/dlc-gpu${suffix:+-emulated}-tests"
bench_leafnet="$bin/dlc-bench-leafnet$suffix"
bench_trainstep="$bin/dlc-bench-trainstep$suffix"
for tool in "$gpu_tests" "$bench_leafnet" "$bench_trainstep"; do
  [ -x "$tool" ] || { say "missing $tool"; exit 1; }
done

# --- 3. GPU tests ----------------------------------------------------------------------
say "GPU tests (device API, every kernel vs the CPU reference, training on all GPUs)"
# "Suite." lines, then "  Test" lines, from gtest's listing.
tests=$("$gpu_tests" --gtest_list_tests |
        awk '/^[^ ]/ {suite=$1} /^  [^ ]/ {print suite $1}')
: >"$out/gpu-tests.log"
passed=0 failed=0 skipped=0 failures=()
tests_started=$SECONDS
for t in $tests; do
  # The stage gets 240 s; a test that starts gets 90 s more at most (then it is killed).
  if [ $((SECONDS - tests_started)) -gt 240 ]; then
    say "test stage over its time: $t not run"
    failed=$((failed + 1)); failures+=("$t (not run)"); continue
  fi
  t0=$SECONDS
  timeout -k 10 90 "$gpu_tests" --gtest_filter="$t" >"$out/test.log" 2>&1
  rc=$?
  cat "$out/test.log" >>"$out/gpu-tests.log"
  if [ "$rc" -eq 0 ] && grep -q '^\[  SKIPPED \] .* ms)$' "$out/test.log"; then
    result=skipped; skipped=$((skipped + 1))
  elif [ "$rc" -eq 0 ] && grep -q '^\[       OK \] .* ms)$' "$out/test.log"; then
    result=passed; passed=$((passed + 1))
  elif [ "$rc" -eq 0 ]; then
    result="FAILED (it did not run: disabled?)"; failed=$((failed + 1)); failures+=("$t")
  else
    result="FAILED (exit $rc$( [ "$rc" -eq 124 ] && echo ', timed out'))"
    failed=$((failed + 1)); failures+=("$t")
    grep -E 'Failure|error|Error|what\(\)|Expected|Which is|actual' "$out/test.log" | head -8 |
      sed 's/^/    /'
  fi
  say "$t: $result in $((SECONDS - t0)) s"
done
rm -f "$out/test.log"
note "gpu tests: $passed passed, $failed failed, $skipped skipped"
[ ${#failures[@]} -eq 0 ] || note "failed: ${failures[*]}"
if [ "$failed" -gt 0 ] || [ "$passed" -eq 0 ]; then status=1; fi
if [ "$skipped" -gt 0 ] && [ "$passed" -eq 0 ]; then
  say "no GPU visible to dlc: the tests skipped; nothing to time"
  for line in "${summary[@]}"; do say "$line"; done
  exit 1
fi

# --- 4. timings ------------------------------------------------------------------------
say "timing dlc on gpu(0): layers and the LeafNetwork step, batch $batch"
DLC_BENCH_DEVICES=gpu:1 timeout 120 "$bench_leafnet" $batch >"$out/dlc-leafnet.jsonl" 2>&1 ||
  { say "dlc-bench-leafnet failed (see $out/dlc-leafnet.jsonl)"; status=1; }
# The convolution layer with cuDNN's heuristic algorithm picks instead of timed ones.
DLC_CUDNN_CONV_ALGO=heuristics DLC_BENCH_DEVICES=gpu:1 timeout 60 "$bench_leafnet" \
  --only=conv2d_fwd_bwd $batch >"$out/dlc-conv-heuristics.jsonl" 2>&1 ||
  say "the heuristic-algorithm convolution failed (see $out/dlc-conv-heuristics.jsonl)"
# Where the step's time goes: DLC_PROFILE waits for each op's kernels (kernel time per op).
DLC_PROFILE=1 DLC_BENCH_DEVICES=gpu:1 timeout 60 "$bench_leafnet" --only=leafnet_step $batch \
  >"$out/dlc-leafnet-profile.txt" 2>&1 || say "the profiled step failed (see $out/dlc-leafnet-profile.txt)"
DLC_PROFILE=1 DLC_BENCH_DEVICES=gpu:1 timeout 60 "$bench_leafnet" --only=leafnet_step_gluon $batch \
  >"$out/dlc-leafnet-gluon-profile.txt" 2>&1 ||
  say "the profiled Gluon step failed (see $out/dlc-leafnet-gluon-profile.txt)"
gpus=$( (nvidia-smi -L 2>/dev/null || echo gpu) | grep -c .)
[ "$emulated" = 1 ] && gpus=$DLC_EMULATED_GPUS
say "timing the training step on 1 GPU and on all $gpus"
DLC_BENCH_DEVICES=gpu:1 timeout 60 "$bench_trainstep" $batch $steps >"$out/dlc-trainstep-1.jsonl" 2>&1 ||
  { say "dlc-bench-trainstep (1 GPU) failed"; status=1; }
# The same on the old path (one stream, host waits): what the copy stream and the
# device-side waits change.
DLC_GPU_EVENT_WAITS=0 DLC_BENCH_DEVICES=gpu:1 timeout 60 "$bench_trainstep" $batch $steps \
  >"$out/dlc-trainstep-1-host-waits.jsonl" 2>&1 || say "dlc-bench-trainstep (host waits) failed"
# And without CUDA graphs (every step's kernels launched one by one): what replaying the
# compiled step's recording changes.
DLC_CUDA_GRAPHS=0 DLC_BENCH_DEVICES=gpu:1 timeout 60 "$bench_trainstep" $batch $steps \
  >"$out/dlc-trainstep-1-no-graphs.jsonl" 2>&1 || say "dlc-bench-trainstep (no graphs) failed"
if [ "$gpus" -gt 1 ]; then
  DLC_BENCH_DEVICES=gpu timeout 90 "$bench_trainstep" $((batch * gpus)) $steps \
    >"$out/dlc-trainstep-all.jsonl" 2>&1 || { say "dlc-bench-trainstep (all GPUs) failed"; status=1; }
fi
if [ "$emulated" = 1 ]; then
  say "emulated GPUs: no PyTorch column"
elif python3 -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1; then
  say "timing PyTorch eager on cuda:0"
  timeout 90 python3 "$root/bench/peers/leafnet.py" torch 32 --device cuda --no-compiled \
    >"$out/torch-leafnet.jsonl" 2>&1 || say "the PyTorch peer failed (see $out/torch-leafnet.jsonl)"
else
  say "PyTorch with CUDA not importable: no peer column"
fi

# --- 5. the table ----------------------------------------------------------------------
python3 - "$out" "$batch" "$emulated" <<'PY' | tee "$out/table.txt"
import json, os, sys
out, batch, emulated = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
if emulated:
    print("EMULATED GPUs: the CPU's times, not a GPU's")
def load(name):
    rows = {}
    path = os.path.join(out, name)
    if os.path.exists(path):
        for line in open(path):
            if line.startswith("{"):
                r = json.loads(line)
                rows[r["bench"]] = r
    return rows
dlc, torch = load("dlc-leafnet.jsonl"), load("torch-leafnet.jsonl")
one, every = load("dlc-trainstep-1.jsonl"), load("dlc-trainstep-all.jsonl")
hostWaits = load("dlc-trainstep-1-host-waits.jsonl")
noGraphs = load("dlc-trainstep-1-no-graphs.jsonl")
print(f"{'benchmark (batch ' + batch + ', gpu 0)':34} {'dlc ms':>9} {'torch ms':>9} {'dlc/torch speed':>16}")
for bench in ["small_op_x100", "conv2d_fwd_bwd", "max_pool2d_fwd_bwd", "batch_norm_fwd_bwd", "dense_fwd_bwd",
              "leafnet_step", "leafnet_step_gluon", "leafnet_step_hybrid"]:
    d, t = dlc.get(bench), torch.get("leafnet_step" if bench.startswith("leafnet") else bench)
    if not d:
        continue
    ratio = f"{t['seconds'] / d['seconds']:.2f}x" if t else "-"
    tms = f"{t['seconds'] * 1e3:9.3f}" if t else f"{'-':>9}"
    print(f"{bench:34} {d['seconds'] * 1e3:9.3f} {tms} {ratio:>16}")
    h = load("dlc-conv-heuristics.jsonl").get(bench) if bench == "conv2d_fwd_bwd" else None
    if h:
        hratio = f"{t['seconds'] / h['seconds']:.2f}x" if t else "-"
        print(f"{'  (cuDNN heuristic algorithms)':34} {h['seconds'] * 1e3:9.3f} {tms} {hratio:>16}")
for mode in ["seed_loop_eager", "seed_loop_hybrid", "train_step"]:
    a, b = one.get(mode), every.get(mode)
    if a:
        scale = f"  all GPUs {b['samples_per_s']:.0f}/s = {b['samples_per_s'] / a['samples_per_s']:.2f}x" if b else ""
        h = hostWaits.get(mode)
        old = f" (one stream, host waits: {h['samples_per_s']:.0f}/s)" if h else ""
        g = noGraphs.get(mode)
        old += f" (no CUDA graphs: {g['samples_per_s']:.0f}/s)" if g else ""
        print(f"training {mode:25} 1 GPU {a['samples_per_s']:.0f} samples/s{old}{scale}")
PY
if [ -s "$out/dlc-leafnet-profile.txt" ]; then
  echo "where dlc's leafnet_step spends GPU time (DLC_PROFILE, top ops):"
  grep -A9 '^dlc kernel profile' "$out/dlc-leafnet-profile.txt" | tee -a "$out/table.txt"
fi
for line in "${summary[@]}"; do say "$line"; done
say "logs in $out; $( [ $status = 0 ] && echo PASSED || echo FAILED ) in $((SECONDS - started)) s"
exit $status
