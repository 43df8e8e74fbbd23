//===- ImmediateLaunches.cpp - launches of the standalone emulator ----------===//
//
// The kernel tests call one kernel at a time and read its outputs right after: a launch
// (and anything else put in a stream) runs before submit returns.
//
//===----------------------------------------------------------------------===//
#include "CudaEmulator.h"

void dlc_emu::submit(cudaStream_t, std::function<void()> job) { job(); }
