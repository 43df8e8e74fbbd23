#!/usr/bin/env bash
# scripts/gpu-bundle.sh - build the GPU check's programs here and pack them, with the few
# shared libraries they need that a bare CUDA machine lacks, into one file that
# `scripts/gpu-check.sh --bundle FILE` runs elsewhere without building.
#
#   scripts/gpu-bundle.sh [--build-dir DIR] [--arch SM] [--output FILE]
#
# Defaults: build-gpu-bundle, sm_90, .gpu-bundle/dlc-gpu.tar.xz. The programs link MLIR and
# LLVM statically (-DDLC_STATIC_LLVM=ON), so the bundle holds them, oneDNN, OpenCL's
# loader, libgomp and cudart; cuDNN, cuBLAS and NCCL are found on the target machine.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$root/build-gpu-bundle"
arch=90
output="$root/.gpu-bundle/dlc-gpu.tar.xz"
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --arch) arch="$2"; shift 2 ;;
    --output) output="$2"; shift 2 ;;
    *) echo "gpu-bundle: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done

programs=(dlc-gpu-tests dlc-bench-leafnet dlc-bench-trainstep)
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
echo "gpu-bundle: building ${programs[*]} (Release, sm_$arch, static MLIR/LLVM) in $build_dir"
cmake -G Ninja -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DDLC_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DDLC_STATIC_LLVM=ON "${launcher[@]}" >/dev/null
cmake --build "$build_dir" --target "${programs[@]}" dlc_cuda

stage="$(mktemp -d -t dlc-gpu-bundle.XXXXXX)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for p in "${programs[@]}"; do cp "$build_dir/bin/$p" "$stage/bin/"; done
# The CUDA backend, which the programs open from ../lib when a GPU is first asked for.
cp "$build_dir/lib/libdlc_cuda.so" "$stage/lib/"
# The shared libraries to carry: every one the programs load except glibc's, the C++
# runtime and the CUDA libraries the target machine brings (its driver must match them).
carried='^lib(dnnl|OpenCL|gomp|cudart)\.so'
for p in "${programs[@]/#/$build_dir/bin/}" "$build_dir/lib/libdlc_cuda.so"; do
  ldd "$p" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if [[ "$name" =~ $carried ]]; then cp -L "$path" "$stage/lib/$name"; fi
done
for need in libdnnl.so libcudart.so; do
  ls "$stage/lib/$need"* >/dev/null 2>&1 || { echo "gpu-bundle: $need not found by ldd" >&2; exit 1; }
done
# libdevice: what the generated GPU kernels' math links when the cuda pipeline makes
# their PTX (the target machine may have no CUDA toolkit; gpu-check.sh points
# DLC_CUDA_TOOLKIT at this copy).
libdevice="${DLC_CUDA_TOOLKIT:-/usr/local/cuda}/nvvm/libdevice/libdevice.10.bc"
[ -f "$libdevice" ] || { echo "gpu-bundle: no $libdevice (set DLC_CUDA_TOOLKIT)" >&2; exit 1; }
mkdir -p "$stage/cuda/nvvm/libdevice"
cp "$libdevice" "$stage/cuda/nvvm/libdevice/"
mkdir -p "$(dirname "$output")"
tar -C "$stage" -cf - bin lib cuda | xz -T0 -6 >"$output"
echo "gpu-bundle: $output ($(du -h "$output" | cut -f1)): $(cd "$stage" && ls bin lib | grep -v : | tr '\n' ' ')"
