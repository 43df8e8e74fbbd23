//===- ByteCoding.h - the model file's little-endian fields (internal) --------===//
//
// Little-endian, no padding: integers as written, strings and lists as a u32 count then
// their elements. A Reader stops at the first problem (a truncated field, a count the
// bytes left cannot hold, an unknown enum), so a damaged or hostile input yields one
// error naming the field, and nothing is allocated from a count it did not check.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_LIB_RUNTIME_FILES_BYTECODING_H
#define DLC_LIB_RUNTIME_FILES_BYTECODING_H

#include "dlc/Core/Attrs.h"
#include "dlc/Core/Device.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace dlc::bytes {

static_assert(sizeof(double) == 8, "doubles are stored as IEEE binary64");

class Writer {
public:
  template <typename T> void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_.append(bytes, sizeof(T));
  }
  void count(size_t n) { put(uint32_t(n)); }
  void text(const std::string &s) {
    count(s.size());
    out_ += s;
  }
  void raw(const void *data, size_t n) { out_.append(static_cast<const char *>(data), n); }
  void ints(const std::vector<int> &list) {
    count(list.size());
    for (int v : list)
      put(int32_t(v));
  }
  void device(Device d) {
    put(int32_t(d.kind));
    put(int32_t(d.id));
  }
  void attrs(const Attrs &attrs) {
    count(attrs.items().size());
    for (const auto &[name, value] : attrs.items()) {
      text(name);
      put(uint8_t(value.index()));
      std::visit(
          [&](const auto &v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
              count(v.size());
              for (int64_t x : v)
                put(x);
            } else if constexpr (std::is_same_v<T, std::string>) {
              text(v);
            } else if constexpr (std::is_same_v<T, bool>) {
              put(uint8_t(v));
            } else {
              put(v);
            }
          },
          value);
    }
  }
  std::string take() { return std::move(out_); }

private:
  std::string out_;
};

class Reader {
public:
  Reader(const char *data, size_t size, std::string &error)
      : at_(data), left_(size), error_(error) {}
  Reader(const std::string &bytes, std::string &error)
      : Reader(bytes.data(), bytes.size(), error) {}

  bool ok() const { return error_.empty(); }
  bool done() const { return left_ == 0; }
  /// Records the first problem; later reads return zeros.
  void fail(const std::string &what) {
    if (error_.empty())
      error_ = what;
  }

  template <typename T> T get(const char *field) {
    T value{};
    if (!ok())
      return value;
    if (left_ < sizeof(T)) {
      fail(std::string("the program ends inside ") + field);
      return value;
    }
    std::memcpy(&value, at_, sizeof(T));
    at_ += sizeof(T);
    left_ -= sizeof(T);
    return value;
  }
  /// A list length: each element takes at least `elementBytes`, so a count the bytes
  /// left cannot hold is refused before anything is allocated.
  size_t count(const char *field, size_t elementBytes = 1) {
    uint32_t n = get<uint32_t>(field);
    if (ok() && uint64_t(n) * elementBytes > left_) {
      fail(std::string(field) + " says " + std::to_string(n) + " entries, more than the " +
           std::to_string(left_) + " bytes left hold");
      return 0;
    }
    return ok() ? n : 0;
  }
  std::string text(const char *field) {
    size_t n = count(field);
    std::string s(at_, ok() ? n : 0);
    at_ += s.size();
    left_ -= s.size();
    return s;
  }
  /// `n` raw bytes (checked like a count of one-byte elements).
  const char *raw(size_t n, const char *field) {
    if (ok() && n > left_)
      fail(std::string(field) + " says " + std::to_string(n) + " bytes, more than the " +
           std::to_string(left_) + " left");
    if (!ok())
      return nullptr;
    const char *data = at_;
    at_ += n;
    left_ -= n;
    return data;
  }
  std::vector<int> ints(const char *field) {
    std::vector<int> list(count(field, 4));
    for (int &v : list)
      v = get<int32_t>(field);
    return list;
  }
  Device device(const char *field) {
    Device d;
    int32_t kind = get<int32_t>(field);
    d.id = get<int32_t>(field);
    switch (DeviceKind(kind)) {
    case DeviceKind::cpu:
    case DeviceKind::gpu:
    case DeviceKind::cpu_pinned:
    case DeviceKind::cpu_shared:
      d.kind = DeviceKind(kind);
      break;
    default:
      fail(std::string(field) + ": device kind " + std::to_string(kind) + " is unknown");
    }
    if (ok() && d.id < 0)
      fail(std::string(field) + ": device id " + std::to_string(d.id) + " is negative");
    return d;
  }
  Attrs attrs(const char *field) {
    Attrs attrs;
    size_t n = count(field, 5);
    for (size_t i = 0; i < n && ok(); ++i) {
      std::string name = text(field);
      uint8_t tag = get<uint8_t>(field);
      switch (tag) {
      case 0:
        attrs.set(name, get<int64_t>(field));
        break;
      case 1:
        attrs.set(name, get<double>(field));
        break;
      case 2:
        attrs.set(name, get<uint8_t>(field) != 0);
        break;
      case 3: {
        std::vector<int64_t> list(count(field, 8));
        for (int64_t &x : list)
          x = get<int64_t>(field);
        attrs.set(name, std::move(list));
        break;
      }
      case 4:
        attrs.set(name, text(field));
        break;
      default:
        fail(std::string(field) + ": attribute '" + name + "' has unknown type tag " +
             std::to_string(tag));
      }
    }
    return attrs;
  }

private:
  const char *at_;
  size_t left_;
  std::string &error_;
};

} // namespace dlc::bytes

#endif // DLC_LIB_RUNTIME_FILES_BYTECODING_H
