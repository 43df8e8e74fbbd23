//===- HostDevice.h - functions compiled for the CPU and for CUDA (internal) ---===//
//
// Element-wise math that a CPU kernel and a GPU thread share is written once, in a
// header both include; this marks its functions for both compilers.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_HOSTDEVICE_H
#define DLC_LIB_RUNTIME_HOSTDEVICE_H

#ifdef __CUDACC__
#define DLC_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define DLC_HOST_DEVICE inline
#endif

#endif // DLC_LIB_RUNTIME_HOSTDEVICE_H
