//===- DLPack.h - the DLPack exchange structures -------------------------------===//
//
// The C structures of the DLPack standard (https://github.com/dmlc/dlpack, version 0.8,
// the one numpy, PyTorch and CuPy speak through __dlpack__), declared here from the
// standard's description: their layout is the ABI, so the fields and their order are
// fixed by it.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_PYTHON_DLPACK_H
#define DLC_PYTHON_DLPACK_H

#include <cstdint>

namespace dlc::python::dlpack {

enum DeviceType : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3 };
enum TypeCode : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kBool = 6 };

struct Device {
  int32_t device_type;
  int32_t device_id;
};

struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void *data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t *shape;
  int64_t *strides; // null: compact, row-major
  uint64_t byte_offset;
};

struct ManagedTensor {
  Tensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(ManagedTensor *self);
};

/// The capsule names of the Python protocol: a producer's capsule is "dltensor"; the
/// consumer renames it "used_dltensor" when it takes ownership.
constexpr const char *kCapsuleName = "dltensor";
constexpr const char *kUsedCapsuleName = "used_dltensor";

} // namespace dlc::python::dlpack

#endif // DLC_PYTHON_DLPACK_H
