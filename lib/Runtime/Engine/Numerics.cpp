//===- Numerics.cpp - the numerics guard --------------------------------------===//
#include "dlc/Runtime/Engine/Numerics.h"

#include "dlc/Core/Error.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

namespace dlc {

namespace {

std::atomic<bool> checking{[] {
  const char *flag = std::getenv("DLC_CHECK_NUMERICS");
  return flag && *flag && std::string(flag) != "0";
}()};

/// 16-bit floats hold a NaN or an infinity when their exponent bits are all ones.
template <uint16_t ExponentMask> int64_t firstNonFinite16(const void *data, int64_t count) {
  const unsigned char *bytes = static_cast<const unsigned char *>(data);
  for (int64_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes + 2 * i, 2);
    if ((bits & ExponentMask) == ExponentMask)
      return i;
  }
  return -1;
}

std::string valueName(const void *data, DType dtype, int64_t at) {
  double value = 0;
  if (dtype == DType::f32) {
    value = static_cast<const float *>(data)[at];
  } else {
    uint16_t bits;
    std::memcpy(&bits, static_cast<const unsigned char *>(data) + 2 * at, 2);
    bool nan = dtype == DType::f16 ? (bits & 0x03ff) != 0 : (bits & 0x007f) != 0;
    value = nan ? std::nan("") : (bits & 0x8000 ? -HUGE_VAL : HUGE_VAL);
  }
  return std::isnan(value) ? "NaN" : value > 0 ? "inf" : "-inf";
}

} // namespace

void set_check_numerics(bool enabled) { checking = enabled; }
bool check_numerics_enabled() { return checking; }

int64_t first_non_finite(const void *data, DType dtype, int64_t count) {
  switch (dtype) {
  case DType::f32: {
    const float *values = static_cast<const float *>(data);
    for (int64_t i = 0; i < count; ++i)
      if (!std::isfinite(values[i]))
        return i;
    return -1;
  }
  case DType::f16:
    return firstNonFinite16<0x7c00>(data, count);
  case DType::bf16:
    return firstNonFinite16<0x7f80>(data, count);
  default:
    return -1;
  }
}

void check_finite_outputs(const char *op, Device device, const std::vector<TensorRef> &inputs,
                          const std::vector<TensorRef> &outputs) {
  if (!device.is_host())
    return;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const TensorRef &out = outputs[k];
    int64_t at = first_non_finite(out.data, out.dtype, out.numel());
    if (at < 0)
      continue;
    std::string origin = "from finite inputs";
    for (size_t i = 0; i < inputs.size(); ++i)
      if (first_non_finite(inputs[i].data, inputs[i].dtype, inputs[i].numel()) >= 0) {
        origin = "but its input #" + std::to_string(i) +
                 " already held one (made outside "
                 "dlc's ops, or copied in)";
        break;
      }
    throw Error(std::string("numerics check (DLC_CHECK_NUMERICS): ") + op + " made " +
                valueName(out.data, out.dtype, at) + " at element " + std::to_string(at) +
                " of output #" + std::to_string(k) + " (" + shape_rules::str(out.shape) + " " +
                dtype_name(out.dtype) + " on " + device.str() + ") " + origin);
  }
}

} // namespace dlc
