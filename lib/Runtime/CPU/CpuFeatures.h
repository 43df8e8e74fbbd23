//===- CpuFeatures.h - which vector instruction sets dlc's own CPU kernels use ---===//
//
// The library is built for baseline x86-64; the kernels dlc writes itself (pooling
// windows, the AVX2 Winograd transforms) have AVX2 and AVX-512 versions chosen at run
// time. The CPU is asked once per process, here, so that every kernel agrees, and
// tests can make the portable loops run where the CPU has more (use_portable_code).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CPU_CPUFEATURES_H
#define DLC_LIB_RUNTIME_CPU_CPUFEATURES_H

#if defined(__x86_64__) && defined(__GNUC__)
#define DLC_X86_KERNELS 1
#include <immintrin.h>
#else
#define DLC_X86_KERNELS 0
#endif

namespace dlc::cpu_kernels {

/// The instruction sets the vector kernels are written for.
enum class CpuFeature { avx2, fma, avx512f };

/// Set by tests (direct::use_portable_code): every cpu_has answers false, so that the
/// portable loops run as on a CPU without vector units dlc has kernels for.
inline bool portableOnly = false;

/// Whether this CPU has `feature` and the portable loops are not asked for.
inline bool cpu_has(CpuFeature feature) {
#if DLC_X86_KERNELS
  static const bool avx2 = __builtin_cpu_supports("avx2"), fma = __builtin_cpu_supports("fma"),
                    avx512f = __builtin_cpu_supports("avx512f");
  return !portableOnly && (feature == CpuFeature::avx2  ? avx2
                           : feature == CpuFeature::fma ? fma
                                                        : avx512f);
#else
  (void)feature;
  return false;
#endif
}

} // namespace dlc::cpu_kernels

#endif // DLC_LIB_RUNTIME_CPU_CPUFEATURES_H
