//===- LeafNetwork.h - the seed tutorial's network, as its helpers build it ---===//
//
// Shared by the example, the benchmark and the tests, so that all three exercise the
// network exactly as the seed writes it.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_EXAMPLES_LEAFNETWORK_H
#define DLC_EXAMPLES_LEAFNETWORK_H

#include <dlc/gluon.h>

namespace leafnet {

using namespace dlc;
using namespace dlc::gluon;

// Convolution block: a convolution, a max pooling, a batch norm (as in the seed).
inline std::shared_ptr<HybridSequential> conv_block(int64_t filters, int64_t kernel_size = 2,
                                             int64_t stride = 2, bool batch_norm = true) {
  auto block = std::make_shared<HybridSequential>();
  block->add(std::make_shared<nn::Conv2D>(filters, kernel_size, "relu"),
             std::make_shared<nn::MaxPool2D>(4, stride));
  if (batch_norm)
    block->add(std::make_shared<nn::BatchNorm>());
  return block;
}

// Dense block: a dense layer and a dropout layer (as in the seed).
inline std::shared_ptr<HybridSequential> dense_block(int64_t neurons, const std::string &activation = "relu",
                                              double dropout = 0.2) {
  auto block = std::make_shared<HybridSequential>();
  block->add(std::make_shared<nn::Dense>(neurons, activation));
  if (dropout > 0)
    block->add(std::make_shared<nn::Dropout>(dropout));
  return block;
}

class LeafNetwork : public HybridBlock {
public:
  LeafNetwork() {
    conv1 = register_child("conv1", conv_block(32));
    conv2 = register_child("conv2", conv_block(64));
    conv3 = register_child("conv3", conv_block(128));
    flatten = register_child("flatten", std::make_shared<nn::Flatten>());
    dense1 = register_child("dense1", dense_block(100));
    dense2 = register_child("dense2", dense_block(10));
    dense3 = register_child("dense3", std::make_shared<nn::Dense>(2));
  }

  Tensor forward(const Tensor &batch) override {
    Tensor x = (*conv1)(batch);
    x = (*conv2)(x);
    x = (*conv3)(x);
    x = (*flatten)(x);
    x = (*dense1)(x);
    x = (*dense2)(x);
    return (*dense3)(x);
  }

private:
  std::shared_ptr<HybridSequential> conv1, conv2, conv3, dense1, dense2;
  std::shared_ptr<nn::Flatten> flatten;
  std::shared_ptr<nn::Dense> dense3;
};

/// The network dlc-train trains: the LeafNetwork adapted to 28x28 images (Fashion-MNIST).
/// Three blocks of [3x3 convolution (padding 1) -> relu -> 2x2 max pooling -> batch
/// norm] with 32, 64 and 128 channels, then dense 100 (relu, dropout 0.2), dense 10
/// (relu, dropout 0.2) and dense 10. The seed's 2x2 convolutions and 4/2 pooling need
/// 128x128 inputs, which would make a CPU run take hours; the blocks keep its structure
/// at Fashion-MNIST's size.
inline std::shared_ptr<HybridSequential> fashion_network() {
  auto block = [](int64_t channels) {
    nn::Conv2DOptions padded;
    padded.padding = {1, 1};
    auto b = std::make_shared<HybridSequential>();
    b->add(std::make_shared<nn::Conv2D>(channels, 3, "relu", padded),
           std::make_shared<nn::MaxPool2D>(2, 2), std::make_shared<nn::BatchNorm>());
    return b;
  };
  auto net = std::make_shared<HybridSequential>();
  net->add(block(32), block(64), block(128), std::make_shared<nn::Flatten>(),
           std::make_shared<nn::Dense>(100, "relu"), std::make_shared<nn::Dropout>(0.2),
           std::make_shared<nn::Dense>(10, "relu"), std::make_shared<nn::Dropout>(0.2),
           std::make_shared<nn::Dense>(10));
  return net;
}

/// One step of the seed's data-parallel loop (its diffs 3-5): split the batch over
/// `devices`, forward and loss on each device under autograd.record, backward on each,
/// and trainer.step over the whole batch. Returns each device's per-sample losses. The
/// example and dlc-train write it out line by line, as the tutorial does; tests and
/// benchmarks that compare against it call this.
template <typename Loss>
std::vector<Tensor> seed_loop_step(Block &net, const Loss &loss_fn, Trainer &trainer,
                                   const Tensor &data, const Tensor &label,
                                   const std::vector<Device> &devices) {
  std::vector<Tensor> data_list = utils::split_and_load(data, devices);
  std::vector<Tensor> label_list = utils::split_and_load(label, devices);
  std::vector<Tensor> losses;
  {
    autograd::Record record;
    for (size_t i = 0; i < data_list.size(); ++i)
      losses.push_back(loss_fn(net(data_list[i]), label_list[i]));
  }
  for (Tensor &l : losses)
    l.backward();
  trainer.step(data.shape()[0]);
  return losses;
}

} // namespace leafnet

#endif // DLC_EXAMPLES_LEAFNETWORK_H
