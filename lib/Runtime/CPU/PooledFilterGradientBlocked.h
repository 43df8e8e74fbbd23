//===- PooledFilterGradientBlocked.h - the pooled weight gradient over blocked x ===//
//
// pooled_filter_gradient's form for a block inside a network, whose x is an activation
// in a blocked layout (PooledFilterGradientBlocked.cpp); PooledFilterGradient.cpp
// routes to it.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_CPU_POOLEDFILTERGRADIENTBLOCKED_H
#define DLC_LIB_RUNTIME_CPU_POOLEDFILTERGRADIENTBLOCKED_H

#include "dlc/Runtime/CPU/NNKernels.h"

namespace dlc::cpu_kernels::pooled_filter_gradient::blocked {

/// Whether `backward` computes the case: x in nChw16c or nChw8c, dy and codes in a
/// blocked layout, a 2x2 or 3x3 window of stride 1, no dilation, one group, and a
/// pooling with at most half as many outputs as inputs.
bool applies(const Conv2DGeometry &conv, const Pool2DGeometry &pool);

/// pooled_filter_gradient::backward's contract for such a case.
void backward(const Conv2DGeometry &conv, const Pool2DGeometry &pool, const uint8_t *codes,
              const float *dy, const float *x, bool relu, float *dw, float *db);

} // namespace dlc::cpu_kernels::pooled_filter_gradient::blocked

#endif // DLC_LIB_RUNTIME_CPU_POOLEDFILTERGRADIENTBLOCKED_H
