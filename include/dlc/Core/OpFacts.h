//===- OpFacts.h - the dlc dialect's op facts, for layers without MLIR --------===//
//
// An op's name, its attributes and their defaults, and the traits that passes and the
// runtime act on are written once, in the dialect's ODS (DLCOps.td). The compiler reads
// them through MLIR. The runtime, its kernels and the eager frontend link no MLIR: they
// read the same facts here, from a header that tools/dlc-op-facts generates from the ODS
// at build time. So a kernel table names its op `ops::conv2d`, not "dlc.conv2d", and
// a kernel reads `op_attrs::avg_pool2d::count_include_pad` with the dialect's default.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_OPFACTS_H
#define DLC_CORE_OPFACTS_H

#include <cstdint>
#include <string_view>

namespace dlc {

/// The rule that chooses an op's memory layouts (dlc/Core/LayoutRules.h says what each
/// does); an op names its rule in its ODS with DLC_LayoutRule. `none`: plain in, plain
/// out.
enum class LayoutRule {
  none,
  elementwise,
  conv,
  conv_backward_filter,
  max_pool,
  max_pool_backward,
  batch_norm,
  batch_norm_backward,
  channel_reduce,
};

/// A scalar attribute of an op with its ODS default.
template <typename T> struct AttrFact {
  const char *name;
  T value; ///< the default
};

namespace op_facts {

/// The traits of DLCOps.td that the MLIR-free layers act on, as flags.
enum class OpTrait : unsigned {
  elementwise_kernel = 1u << 0, ///< DLC_ElementwiseKernel
  broadcasting = 1u << 1,       ///< DLC_Broadcasting
  batch_shaped_result = 1u << 2 ///< DLC_BatchShapedResult
};

/// How an attribute is stored in the dialect (and so how the eager value is spelled).
enum class AttrKind { boolean, flag, integer, real, integers, string, enumeration, other };

struct AttrInfo {
  const char *name;
  AttrKind kind;
  const char *default_value; ///< as ODS writes it, or null: required (or optional)
};

struct OpInfo {
  const char *name; ///< "dlc.conv2d"
  unsigned traits;
  const AttrInfo *attrs;
  int attr_count;
  LayoutRule layout_rule;
  /// How many operands and results the op takes (its ODS arguments that are not
  /// attributes; optional ones count towards the maximum only); -1: no maximum
  /// (variadic).
  int min_operands, max_operands, min_results, max_results;

  bool has(OpTrait trait) const { return (traits & unsigned(trait)) != 0; }
  /// Whether `operands` operands and `results` results fit the op's counts.
  bool takes(size_t operands, size_t results) const {
    auto within = [](size_t n, int low, int high) {
      return n >= size_t(low) && (high < 0 || n <= size_t(high));
    };
    return within(operands, min_operands, max_operands) &&
           within(results, min_results, max_results);
  }
  /// The attribute called `attr`, or null.
  const AttrInfo *attr(std::string_view attr) const {
    for (int i = 0; i < attr_count; ++i)
      if (attr == attrs[i].name)
        return &attrs[i];
    return nullptr;
  }
};

} // namespace op_facts
} // namespace dlc

#include "dlc/Core/OpFacts.inc"

namespace dlc::op_facts {

/// The facts of the dialect op called `name` ("dlc.conv2d"), or null when there is none.
inline const OpInfo *find(std::string_view name) {
  for (const OpInfo &op : kTable)
    if (name == op.name)
      return &op;
  return nullptr;
}

/// Whether the dialect op `name` has `trait` (false for names that are no dialect op).
inline bool has_trait(std::string_view name, OpTrait trait) {
  const OpInfo *op = find(name);
  return op && op->has(trait);
}

} // namespace dlc::op_facts

#endif // DLC_CORE_OPFACTS_H
