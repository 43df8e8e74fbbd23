//===- dataloader.cpp - how fast the DataLoader feeds the seed's pipeline ----===//
//
// Fashion-MNIST images through the seed tutorial's transforms (Resize 224 keeping the
// ratio, CenterCrop 128, RandomFlipLeftRight, RandomColorJitter(contrast 0.05),
// ToTensor, Normalize), batches of 32, with 0, 1 and 2 worker threads.
//
// Usage: dlc-bench-dataloader [images]   (default 3200)
//
//===----------------------------------------------------------------------===//
#include <dlc/gluon.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace dlc;
using namespace dlc::gluon::data;
namespace T = dlc::gluon::data::vision::transforms;

int main(int argc, char **argv) {
  int64_t images = argc > 1 ? std::atoll(argv[1]) : 3200;
  auto fashion = std::make_shared<vision::FashionMNIST>();
  auto subset = std::make_shared<ArrayDataset>(
      fashion->images().slice(0, images),
      std::vector<int64_t>(fashion->labels().begin(), fashion->labels().begin() + images));
  auto pipeline = subset->transform_first(T::Compose(
      {T::Resize(224, /*keep_ratio=*/true), T::CenterCrop(128), T::RandomFlipLeftRight(),
       T::RandomColorJitter(0, 0.05), T::ToTensor(), T::Normalize({0.286f}, {0.353f})}));
  for (int workers : {0, 1, 2}) {
    DataLoader loader(pipeline, 32, true, LastBatch::discard, workers, 4, 1);
    auto start = std::chrono::steady_clock::now();
    int64_t seen = 0;
    for (Batch batch : loader) {
      batch.data.wait_to_read();
      seen += batch.data.shape()[0];
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("{\"bench\": \"dataloader_seed_pipeline\", \"workers\": %d, \"images\": %lld, "
                "\"seconds\": %.3f, \"images_per_s\": %.0f}\n",
                workers, (long long)seen, seconds, double(seen) / seconds);
  }
  return 0;
}
