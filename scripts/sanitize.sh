#!/usr/bin/env bash
# scripts/sanitize.sh - builds dlc with AddressSanitizer (with LeakSanitizer) and
# UndefinedBehaviorSanitizer and runs the tests under them (the zoo's training tests for
# one network per family, see below); any report fails the run.
#
#   scripts/sanitize.sh [CTEST ARGS ...]
#
# The build (build-sanitize, DLC_SANITIZE_BUILD_DIR to move it) is separate from
# ./dlc.sh's: the same g++ (and so the same OpenMP runtime as oneDNN's), -O1, no CUDA
# backend (see cmake/DLCSanitizers.cmake). Run it after ./dlc.sh has installed the
# packages; CI runs it after the tests (.ci/run). Extra arguments go to ctest (e.g.
# -R Serialization).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${DLC_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
started=$SECONDS
say() { printf '[sanitize %4ds] %s\n' "$((SECONDS - started))" "$*"; }

export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
say "configuring $build_dir (g++ -O1; address, undefined; no CUDA)"
# -O1: the instrumentation makes -O3 compiles about four times slower, -O1 twice.
# No MPI: Open MPI's own start-up allocations, never freed, would read as leaks in every
# process of a job (its process group is the one file not checked here; the rest of
# dlc::dist runs as a job of one).
mkdir -p "$build_dir"
cmake -G Ninja -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DDLC_SANITIZE=address,undefined -DDLC_ENABLE_CUDA=OFF -DDLC_ENABLE_PYTHON=OFF \
  -DDLC_ENABLE_MPI=OFF \
  >"$build_dir/configure.log" 2>&1 || { tail -20 "$build_dir/configure.log"; exit 1; }
say "building"
cmake --build "$build_dir" ${DLC_JOBS:+-j "$DLC_JOBS"}

# Reports are fatal and name the stack. Leaks are checked at every test program's exit;
# the suppressions name what is not dlc's (see the file). An allocation too large to
# make returns null, as malloc does, so that dlc's out-of-memory errors are tested too.
# allow_user_poisoning=0: see scripts/fuzz.sh (LLVM's allocators' slab poisoning).
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:allocator_may_return_null=1:allow_user_poisoning=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$root/scripts/sanitizer-suppressions.txt:print_suppressions=0"
say "running the tests under the sanitizers"
# The model zoo's training tests run here for one network per family and width class
# (ResNet-18 and -50 v1 and v2, VGG-11 with and without batch norm, AlexNet, DenseNet-121,
# both SqueezeNets, Inception v3, MobileNet 0.25, MobileNetV2 0.25): the deeper and wider
# variants run the same code and took 5 of the 7 minutes the 34 took under the
# sanitizers. All 34 run in the main pass (./dlc.sh test). An -E of the caller's wins.
zoo_variants='EveryZooNetwork\..*/(resnet(34|101|152)_v[12]|vgg(13|16|19)(_bn)?|densenet(161|169|201)|mobilenet(0_5|0_75|1_0)|mobilenetv2_(0_5|0_75|1_0))( |$)'
ctest --test-dir "$build_dir" --output-on-failure -E "$zoo_variants" "$@"
say "clean: no sanitizer report"
