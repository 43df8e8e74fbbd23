//===- HostDevice.h - functions compiled for the CPU and for CUDA --------------===//
//
// Element-wise math that a CPU kernel and a GPU thread share is written once, in a
// header both include (dlc/Core/ElementwiseMath.h, the runtime's OptimizerMath.h); this
// marks its functions for both compilers.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_HOSTDEVICE_H
#define DLC_CORE_HOSTDEVICE_H

#ifdef __CUDACC__
#define DLC_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define DLC_HOST_DEVICE inline
#endif

#endif // DLC_CORE_HOSTDEVICE_H
