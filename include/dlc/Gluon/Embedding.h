//===- Embedding.h - gluon.nn's Embedding -------------------------------------===//
//
// MXNet 1.9.1's layer: a `weight` of shape (input_dim, output_dim), one row per id, so
// that its `.params` files load; the forward is a `take` along axis 0, whose gradient
// adds each id's output gradient to its row (ids seen twice get the sum).
//
//===----------------------------------------------------------------------===//
#ifndef DLC_GLUON_EMBEDDING_H
#define DLC_GLUON_EMBEDDING_H

#include "dlc/Gluon/Block.h"
#include "dlc/Gluon/Initializer.h"

namespace dlc::gluon::nn {

/// Maps integer ids (or float ones, truncated, as MXNet 1.x code passes them) of any
/// shape to rows of `weight`: ids (d...) give (d..., output_dim). An id outside
/// [-input_dim, input_dim) is an IndexError naming it (negative ones count from the
/// end, as take's do).
class Embedding : public HybridBlock {
public:
  Embedding(int64_t input_dim, int64_t output_dim, init::InitializerPtr weight_initializer = nullptr);
  Tensor forward(const Tensor &ids) override;
  std::string kind() const override;
  ParameterPtr weight;

private:
  int64_t inputDim_, outputDim_;
};

} // namespace dlc::gluon::nn

#endif // DLC_GLUON_EMBEDDING_H
