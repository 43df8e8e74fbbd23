//===- GeneratedRegionsCheck.h - a compiled step with and without generated code -===//
//
// The fused element-wise regions a compiled training step forms run as generated code
// by default; DLC_GENERATED_KERNELS=0 compiles the same step with each region run by its
// reference kernels (interpreted chunk by chunk on CPUs, op by op on GPUs). Two steps of
// a network with BatchNorm and dropout pass every region's outputs into the
// parameters, so comparing them checks every region the step forms, on random inputs.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_UNITTESTS_GLUON_GENERATEDREGIONSCHECK_H
#define DLC_UNITTESTS_GLUON_GENERATEDREGIONSCHECK_H

#include "../Frontend/GradientCheck.h"
#include "../../examples/LeafNetwork.h"

#include <cstdlib>
#include <functional>

namespace dlc::testing {

struct RegionRun {
  std::vector<std::vector<float>> params;
  std::string program; ///< the compiled step's listing
};

/// Two compiled steps of `make()`'s network on `device`, on a batch of 8 random images
/// of `image` (C, H, W) with labels below `classes`; `generated` false compiles without
/// generated kernels (CompileOptions::generated_kernels).
inline RegionRun trainTwoCompiledSteps(const std::function<std::shared_ptr<gluon::Block>()> &make,
                                       const Shape &image, int64_t classes, Device device,
                                       bool generated) {
  CompileOptions options = compile_options_from_environment();
  options.generated_kernels = generated;
  np::random::seed(5);
  std::shared_ptr<gluon::Block> net = make();
  net->initialize(init::Xavier(), {device});
  {
    autograd::Pause shapes;
    (*net)(np::zeros({1, image[0], image[1], image[2]}, device));
  }
  gluon::Trainer trainer(net->collect_params(), "sgd",
                         {{"learning_rate", 0.05}, {"momentum", 0.9}});
  gluon::loss::SoftmaxCrossEntropyLoss lossFn;
  gluon::TrainStep step(*net, lossFn, trainer, {device}, /*sync_batch_norm=*/false, options);
  Tensor images = randomTensor({8, image[0], image[1], image[2]}, 9);
  Tensor labels = np::random::randint(0, classes, {8});
  np::random::seed(23); // dropout masks
  for (int i = 0; i < 2; ++i)
    step(images, labels);
  RegionRun run;
  for (const gluon::ParameterPtr &p : net->collect_params().values())
    run.params.push_back(p->data(device).to(cpu(0)).to_vector<float>());
  run.program = step.compiled().program();
  return run;
}

/// The networks whose regions are checked: the seed's LeafNetwork (32x32 images here,
/// 2 classes) and dlc-train's network (28x28 gray images, 10 classes).
struct CheckedNetwork {
  const char *name;
  std::function<std::shared_ptr<gluon::Block>()> make;
  Shape image;
  int64_t classes;
};
inline std::vector<CheckedNetwork> regionCheckedNetworks() {
  return {{"LeafNetwork", [] { return std::make_shared<leafnet::LeafNetwork>(); }, {3, 32, 32}, 2},
          {"dlc-train's network", [] { return leafnet::fashion_network(); }, {1, 28, 28}, 10}};
}

/// Both networks trained with generated regions and with reference kernels on `device`:
/// the programs show `tag` ("[generated]" or "[generated gpu]") only with generated
/// regions, and every parameter agrees to `tolerance`.
inline void expectGeneratedRegionsMatchTheirReference(Device device, double tolerance,
                                                      const std::string &tag) {
  for (const CheckedNetwork &net : regionCheckedNetworks()) {
    RegionRun generated = trainTwoCompiledSteps(net.make, net.image, net.classes, device, true);
    RegionRun reference = trainTwoCompiledSteps(net.make, net.image, net.classes, device, false);
    EXPECT_NE(generated.program.find("}" + tag), std::string::npos)
        << net.name << ": no generated region\n" << generated.program;
    EXPECT_EQ(reference.program.find(tag), std::string::npos) << net.name;
    ASSERT_EQ(generated.params.size(), reference.params.size());
    for (size_t p = 0; p < generated.params.size(); ++p)
      expectClose(reference.params[p], generated.params[p], tolerance,
                  std::string(net.name) + " parameter #" + std::to_string(p));
  }
}

} // namespace dlc::testing

#endif // DLC_UNITTESTS_GLUON_GENERATEDREGIONSCHECK_H
