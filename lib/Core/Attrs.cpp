//===- Attrs.cpp - typed access to op attributes ------------------------------===//
#include "dlc/Core/Attrs.h"

#include "dlc/Core/Error.h"

#include <sstream>

namespace dlc {

namespace {
template <typename T>
T getAs(const std::map<std::string, AttrValue> &values, const std::string &name, T fallback,
        const char *expected) {
  auto it = values.find(name);
  if (it == values.end())
    return fallback;
  if (const T *value = std::get_if<T>(&it->second))
    return *value;
  throw Error("attribute '" + name + "' must be " + expected);
}
} // namespace

int64_t Attrs::get_int(const std::string &name, int64_t fallback) const {
  return getAs<int64_t>(values_, name, fallback, "an integer");
}

double Attrs::get_float(const std::string &name, double fallback) const {
  auto it = values_.find(name);
  if (it != values_.end())
    if (const int64_t *asInt = std::get_if<int64_t>(&it->second))
      return double(*asInt);
  return getAs<double>(values_, name, fallback, "a number");
}

bool Attrs::get_bool(const std::string &name, bool fallback) const {
  return getAs<bool>(values_, name, fallback, "a bool");
}

std::vector<int64_t> Attrs::get_ints(const std::string &name,
                                     const std::vector<int64_t> &fallback) const {
  return getAs<std::vector<int64_t>>(values_, name, fallback, "a list of integers");
}

std::string Attrs::get_string(const std::string &name, const std::string &fallback) const {
  return getAs<std::string>(values_, name, fallback, "a string");
}

std::string Attrs::str() const {
  std::ostringstream os;
  os << "{";
  bool first = true;
  for (const auto &[name, value] : values_) {
    os << (first ? "" : ", ") << name << " = ";
    first = false;
    std::visit(
        [&](const auto &v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
            os << "[";
            for (size_t i = 0; i < v.size(); ++i)
              os << (i ? ", " : "") << v[i];
            os << "]";
          } else if constexpr (std::is_same_v<V, bool>) {
            os << (v ? "true" : "false");
          } else {
            os << v;
          }
        },
        value);
  }
  os << "}";
  return os.str();
}

} // namespace dlc
