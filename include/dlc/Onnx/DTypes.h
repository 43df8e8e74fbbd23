//===- DTypes.h - ONNX's element type codes for dlc's dtypes -------------------===//
//
// TensorProto.DataType's numbers, written once for the reader, the writer and the
// export's translation (which must not need protobuf); lib/Onnx/OnnxFile.cpp checks
// them against onnx.pb.h at compile time.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_ONNX_DTYPES_H
#define DLC_ONNX_DTYPES_H

#include "dlc/Core/DType.h"

#include <cstdint>
#include <optional>

namespace dlc::onnx {

namespace onnx_code {
constexpr int32_t float32 = 1, uint8 = 2, int32 = 6, int64 = 7, boolean = 9, float16 = 10,
                  bfloat16 = 16;
} // namespace onnx_code

/// dlc's dtype for an ONNX code, if dlc has it.
inline std::optional<DType> dtype_from_onnx(int32_t code) {
  switch (code) {
  case onnx_code::float32: return DType::f32;
  case onnx_code::float16: return DType::f16;
  case onnx_code::bfloat16: return DType::bf16;
  case onnx_code::int32: return DType::i32;
  case onnx_code::int64: return DType::i64;
  case onnx_code::uint8: return DType::u8;
  case onnx_code::boolean: return DType::boolean;
  default: return std::nullopt;
  }
}

/// The ONNX code of a dlc dtype.
inline int32_t onnx_dtype_of(DType dtype) {
  switch (dtype) {
  case DType::f32: return onnx_code::float32;
  case DType::f16: return onnx_code::float16;
  case DType::bf16: return onnx_code::bfloat16;
  case DType::i32: return onnx_code::int32;
  case DType::i64: return onnx_code::int64;
  case DType::u8: return onnx_code::uint8;
  case DType::boolean: return onnx_code::boolean;
  }
  return 0;
}

} // namespace dlc::onnx

#endif // DLC_ONNX_DTYPES_H
