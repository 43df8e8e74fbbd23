#!/usr/bin/env bash
# dlc.sh - the one entry point: set up a Debian 12 machine, build, and run dlc.
#
#   ./dlc.sh run     install what is missing, build, run the main job
#   ./dlc.sh test    install what is missing, build, run every test (GoogleTest, lit and pytest via ctest)
#
# Environment: DLC_BUILD_DIR (default: build), DLC_CMAKE_ARGS (extra CMake arguments,
# e.g. -DDLC_ENABLE_CUDA=OFF), DLC_JOBS (parallel build jobs, default: ninja's choice).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build_dir="${DLC_BUILD_DIR:-$root/build}"

# Debian 12 packages the build and the tests need, installed without their
# recommendations: this list is complete on a minimal Debian 12 system, which
# scripts/fresh-machine.sh proves (CI runs the tests there). CUDA is not among them: the
# toolkit at /usr/local/cuda is used when present (see cmake/DLCFindCUDA.cmake). oneDNN
# and OpenCV are found by their headers and libraries, so neither OpenCL's development
# files nor the whole of libopencv-dev are needed (cmake/DLCFindOneDNN.cmake,
# cmake/DLCFindOpenCV.cmake).
packages=(
  g++ cmake ninja-build ccache python3
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  zlib1g-dev libzstd-dev nlohmann-json3-dev libssl-dev
  libonnx-dev libprotobuf-dev libonnx-testdata
  libgtest-dev libdnnl-dev
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
  dataset-fashion-mnist fortunes
  python3-dev pybind11-dev python3-numpy python3-pytest python3-venv
  openmpi-bin libopenmpi-dev
)

say() { printf '\033[1m[dlc]\033[0m %s\n' "$*"; }

setup() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    say "all ${#packages[@]} Debian packages present"
    return
  fi
  say "installing: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
}

build() {
  # ccache keyed on paths relative to the source root, so that a fresh clone elsewhere
  # (CI) reuses the objects of an earlier build.
  export CCACHE_BASEDIR="$root"
  export CCACHE_NOHASHDIR=1
  local started=$SECONDS
  # shellcheck disable=SC2086
  cmake -G Ninja -S "$root" -B "$build_dir" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache \
    -DPython3_EXECUTABLE=/usr/bin/python3 \
    ${DLC_CMAKE_ARGS:-}
  cmake --build "$build_dir" ${DLC_JOBS:+-j "$DLC_JOBS"}
  say "built in $((SECONDS - started)) s ($(ccache -s 2>/dev/null | grep -iE '^ *hits' | head -1 | xargs || true))"
}

run_main_job() {
  # dlc-train with no arguments trains on Fashion-MNIST on every device (see README).
  "$build_dir/bin/dlc-info"
  "$build_dir/bin/dlc-train" --out "$root/dlc-train-out" "$@"
}

run_tests() {
  local started=$SECONDS
  ctest --test-dir "$build_dir" --output-on-failure "$@"
  say "tests ran in $((SECONDS - started)) s"
}

case "${1:-}" in
  run)  shift; setup; build; run_main_job "$@" ;;
  test) shift; setup; build; run_tests "$@" ;;
  *)
    echo "usage: ./dlc.sh run | ./dlc.sh test" >&2
    exit 2
    ;;
esac
