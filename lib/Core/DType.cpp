//===- DType.cpp - element type sizes, names and 16-bit float conversions ----===//
#include "dlc/Core/DType.h"

#include <cstring>

namespace dlc {

size_t dtype_size(DType dtype) {
  switch (dtype) {
  case DType::f32:
  case DType::i32:
    return 4;
  case DType::f16:
  case DType::bf16:
    return 2;
  case DType::i64:
    return 8;
  case DType::u8:
  case DType::boolean:
    return 1;
  }
  return 0;
}

const char *dtype_name(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "float32";
  case DType::f16:
    return "float16";
  case DType::bf16:
    return "bfloat16";
  case DType::i32:
    return "int32";
  case DType::i64:
    return "int64";
  case DType::u8:
    return "uint8";
  case DType::boolean:
    return "bool";
  }
  return "unknown";
}

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16;
}

std::ostream &operator<<(std::ostream &os, DType dtype) { return os << dtype_name(dtype); }

namespace {
uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}
float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}
} // namespace

float to_float(bfloat16 value) { return floatOf(uint32_t(value.bits) << 16); }

bfloat16 to_bfloat16(float value) {
  uint32_t bits = bitsOf(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN stays a (quiet) NaN
    return {uint16_t((bits >> 16) | 0x40)};
  // Round to nearest even on the 16 dropped bits.
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return {uint16_t((bits + rounding) >> 16)};
}

float to_float(float16 value) {
  uint32_t sign = uint32_t(value.bits & 0x8000u) << 16;
  uint32_t exponent = (value.bits >> 10) & 0x1fu;
  uint32_t mantissa = value.bits & 0x3ffu;
  if (exponent == 0) {
    if (mantissa == 0)
      return floatOf(sign);
    // Subnormal half: scale by 2^-24.
    float magnitude = float(mantissa) * (1.0f / 16777216.0f);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31)
    return floatOf(sign | 0x7f800000u | (mantissa << 13));
  return floatOf(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

float16 to_float16(float value) {
  uint32_t bits = bitsOf(value);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN
    return {uint16_t(sign | 0x7e00u)};
  if (magnitude >= 0x477ff000u) // rounds to beyond the largest half: infinity
    return {uint16_t(sign | 0x7c00u)};
  if (magnitude < 0x38800000u) { // below the smallest normal half: subnormal or zero
    float scaled = floatOf(magnitude) * 16777216.0f; // in units of 2^-24
    uint32_t rounded = uint32_t(scaled);
    float rest = scaled - float(rounded);
    if (rest > 0.5f || (rest == 0.5f && (rounded & 1u)))
      ++rounded;
    return {uint16_t(sign | rounded)};
  }
  // Normal: rebias the exponent, round to nearest even on the 13 dropped bits.
  uint32_t rebased = magnitude - (112u << 23);
  uint32_t rounding = 0xfffu + ((rebased >> 13) & 1u);
  return {uint16_t(sign | ((rebased + rounding) >> 13))};
}

} // namespace dlc
