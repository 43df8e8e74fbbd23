//===- DType.h - element types of tensors ------------------------------------===//
#ifndef DLC_CORE_DTYPE_H
#define DLC_CORE_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

namespace dlc {

/// Element types. New ones are appended, never inserted, so stored values stay valid.
enum class DType : int32_t { f32, f16, bf16, i32, i64, u8, boolean };

/// Bytes per element.
size_t dtype_size(DType dtype);
/// "float32", "float16", "bfloat16", "int32", "int64", "uint8", "bool" (numpy's names).
const char *dtype_name(DType dtype);
bool is_floating(DType dtype);
std::ostream &operator<<(std::ostream &os, DType dtype);

/// 16-bit floats are stored as their bit patterns; arithmetic converts through float.
struct float16 {
  uint16_t bits = 0;
};
struct bfloat16 {
  uint16_t bits = 0;
};
float to_float(float16 value);
float to_float(bfloat16 value);
float16 to_float16(float value);
bfloat16 to_bfloat16(float value);

/// The DType of a C++ element type.
template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<float16>() { return DType::f16; }
template <> constexpr DType dtype_of<bfloat16>() { return DType::bf16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<bool>() { return DType::boolean; }

} // namespace dlc

#endif // DLC_CORE_DTYPE_H
