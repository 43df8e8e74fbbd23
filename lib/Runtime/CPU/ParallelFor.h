//===- ParallelFor.h - loops over OpenMP's team only when they are large -------===//
//
// A `parallel for` whose `if` clause is false still sets up a one-thread team (libgomp
// allocates it and makes a system call): on a batch-1 prediction's small tensors that
// cost as much as the loop. These run small loops as plain loops instead.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CPU_PARALLELFOR_H
#define DLC_LIB_RUNTIME_CPU_PARALLELFOR_H

#include <cstdint>

#ifdef _OPENMP // also included by the CUDA backend, which is built without OpenMP
#include <omp.h>
#endif

namespace dlc::cpu_kernels {

/// The threads a `parallel for` would split a loop over (1 without OpenMP).
inline int64_t team_size() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/// Runs body(i) for i in [0, n), split statically over the OpenMP team when `parallel`,
/// as a plain loop on the calling thread otherwise.
template <typename Body> inline void parallel_for_if(bool parallel, int64_t n, Body &&body) {
  if (!parallel) {
    for (int64_t i = 0; i < n; ++i)
      body(i);
    return;
  }
#ifdef _OPENMP // also included by the CUDA backend, which is built without OpenMP
#pragma omp parallel for schedule(static)
#endif
  for (int64_t i = 0; i < n; ++i)
    body(i);
}

} // namespace dlc::cpu_kernels

#endif // DLC_LIB_RUNTIME_CPU_PARALLELFOR_H
