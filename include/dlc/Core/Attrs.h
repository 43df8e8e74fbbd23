//===- Attrs.h - op attributes passed to shape rules and kernels ------------===//
//
// Attribute names are the `dlc` dialect's (stride, padding, axes, keepdims, ...), so the
// compiled path hands a traced op's attributes to the same kernels as eager calls do.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_ATTRS_H
#define DLC_CORE_ATTRS_H

#include "dlc/Core/OpFacts.h"

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace dlc {

using AttrValue = std::variant<int64_t, double, bool, std::vector<int64_t>, std::string>;

/// A small ordered map of named attributes with typed getters.
class Attrs {
public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> values)
      : values_(values) {}

  Attrs &set(const std::string &name, AttrValue value) {
    values_[name] = std::move(value);
    return *this;
  }
  bool has(const std::string &name) const { return values_.count(name) != 0; }
  /// Every attribute, by name.
  const std::map<std::string, AttrValue> &items() const { return values_; }

  int64_t get_int(const std::string &name, int64_t fallback) const;
  double get_float(const std::string &name, double fallback) const;
  bool get_bool(const std::string &name, bool fallback) const;
  std::vector<int64_t> get_ints(const std::string &name,
                                const std::vector<int64_t> &fallback) const;
  std::string get_string(const std::string &name, const std::string &fallback) const;
  /// The attribute `fact` names, else the dialect's default for it (dlc/Core/OpFacts.h).
  bool get(const AttrFact<bool> &fact) const { return get_bool(fact.name, fact.value); }
  int64_t get(const AttrFact<int64_t> &fact) const { return get_int(fact.name, fact.value); }
  double get(const AttrFact<double> &fact) const { return get_float(fact.name, fact.value); }

  /// "{axis = 1, keepdims = true}", for error messages.
  std::string str() const;

private:
  std::map<std::string, AttrValue> values_;
};

} // namespace dlc

#endif // DLC_CORE_ATTRS_H
