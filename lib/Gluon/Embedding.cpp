//===- Embedding.cpp - gluon.nn's Embedding -----------------------------------===//
#include "dlc/Gluon/Embedding.h"

#include "dlc/Frontend/NumPy.h"

namespace dlc::gluon::nn {

Embedding::Embedding(int64_t input_dim, int64_t output_dim,
                     init::InitializerPtr weight_initializer)
    : inputDim_(input_dim), outputDim_(output_dim) {
  if (input_dim <= 0 || output_dim <= 0)
    throw ValueError("Embedding: input_dim and output_dim must be positive, got " +
                     std::to_string(input_dim) + " and " + std::to_string(output_dim));
  weight = register_parameter(
      "weight", std::make_shared<Parameter>("weight", Shape{input_dim, output_dim}, DType::f32,
                                            std::move(weight_initializer)));
}

Tensor Embedding::forward(const Tensor &ids) {
  return npx::embedding(ids, weight->data(ids.device()));
}

std::string Embedding::kind() const {
  return "Embedding(" + std::to_string(inputDim_) + " -> " + std::to_string(outputDim_) +
         ", float32)";
}

} // namespace dlc::gluon::nn
