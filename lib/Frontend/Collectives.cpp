//===- Collectives.cpp - npx::all_reduce --------------------------------------===//
#include "dlc/Frontend/Collectives.h"

#include "dlc/Core/Error.h"
#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/Dist.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Runtime/Distributed/Collectives.h"
#include "dlc/Runtime/Distributed/ProcessGroup.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace dlc::npx {

namespace {

void requireSameKind(const std::vector<Tensor> &tensors, bool mean) {
  if (tensors.empty())
    throw ValueError("all_reduce: needs at least one tensor");
  const Tensor &first = tensors.front();
  DType dtype = first.dtype();
  if (dtype == DType::boolean)
    throw DTypeError("all_reduce: cannot add bool tensors (tensor 0 on " +
                     first.device().str() + ")");
  if (mean && dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16)
    throw DTypeError(std::string("all_reduce: the mean needs floating-point tensors, got ") +
                     dtype_name(dtype) + " (tensor 0 on " + first.device().str() + ")");
  for (size_t i = 1; i < tensors.size(); ++i) {
    const Tensor &t = tensors[i];
    if (t.shape() != first.shape())
      throw ShapeError("all_reduce: tensor " + std::to_string(i) + " on " + t.device().str() +
                       " has shape " + shape_rules::str(t.shape()) + ", tensor 0 on " +
                       first.device().str() + " has " + shape_rules::str(first.shape()) +
                       "; every tensor must have the same shape");
    if (t.dtype() != first.dtype())
      throw DTypeError("all_reduce: tensor " + std::to_string(i) + " on " + t.device().str() +
                       " is " + dtype_name(t.dtype()) + ", tensor 0 is " +
                       dtype_name(first.dtype()) + "; every tensor must have the same dtype");
    for (size_t j = 0; j < i; ++j)
      if (tensors[j].device() == t.device())
        throw ValueError("all_reduce: tensors " + std::to_string(j) + " and " + std::to_string(i) +
                         " are both on " + t.device().str() + "; expected one tensor per device");
  }
}

} // namespace

std::vector<Tensor> all_reduce(const std::vector<Tensor> &tensors, bool mean,
                               bool over_processes) {
  requireSameKind(tensors, mean);
  autograd::Pause pause; // a collective is not part of any recorded graph
  size_t count = tensors.size();
  over_processes = over_processes && dist::size() > 1;
  if (count == 1 && !over_processes) // results never share memory with the inputs
    return {tensors.front().copyto(tensors.front().device())};
  bool gpus = (count > 1 || over_processes) &&
              std::all_of(tensors.begin(), tensors.end(),
                          [](const Tensor &t) { return !t.device().is_host(); });
  if (over_processes && (!gpus || gpu_sums_through_host())) {
    // Through the host and the process group, in the order one process would add them.
    Tensor total = dist::all_reduce(tensors);
    if (mean)
      total = total / double(count * size_t(dist::size()));
    std::vector<Tensor> results;
    for (const Tensor &t : tensors)
      results.push_back(t.device() == total.device() ? total : total.to(t.device()));
    return results;
  }
  std::vector<Tensor> results;
  if (gpus) {
    std::vector<AllReduceRank> ranks;
    for (const Tensor &t : tensors) {
      Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
      ranks.push_back({t.device(), {t.data(), t.shape(), t.dtype()},
                       {out.data(), out.shape(), out.dtype()}, t.buffer(), out.buffer()});
      results.push_back(out);
    }
    enqueue_gpu_all_reduce(ranks, mean, over_processes);
    return results;
  }
  // KVStore 'device': the tensors meet on the first device, in order.
  Device home = tensors.front().device();
  Tensor total = tensors.front();
  for (size_t i = 1; i < count; ++i)
    total = total + tensors[i].to(home);
  if (mean)
    total = total / double(count);
  for (const Tensor &t : tensors)
    results.push_back(t.device() == home ? total : total.to(t.device()));
  return results;
}

std::vector<std::vector<Tensor>> all_reduce_coalesced(const std::vector<std::vector<Tensor>> &items,
                                                      bool mean, size_t bucket_bytes,
                                                      bool over_processes) {
  autograd::Pause pause;
  for (size_t k = 0; k < items.size(); ++k) {
    requireSameKind(items[k], mean);
    bool sameDevices = items[k].size() == items[0].size();
    for (size_t j = 0; sameDevices && j < items[k].size(); ++j)
      sameDevices = items[k][j].device() == items[0][j].device();
    if (!sameDevices)
      throw ValueError("all_reduce_coalesced: item " + std::to_string(k) +
                       " is on other devices than item 0; every item needs one "
                       "tensor on each of the same devices, in the same order");
  }
  std::vector<std::vector<Tensor>> results(items.size());
  // Open buckets per dtype: the items in them and their bytes.
  std::map<DType, std::pair<std::vector<size_t>, size_t>> open;
  auto flush = [&](std::vector<size_t> &bucket) {
    if (bucket.size() == 1)
      results[bucket[0]] = all_reduce(items[bucket[0]], mean, over_processes);
    if (bucket.size() > 1) {
      std::vector<Tensor> flats;
      for (size_t j = 0; j < items[bucket[0]].size(); ++j) {
        std::vector<Tensor> parts;
        for (size_t k : bucket)
          parts.push_back(items[k][j].reshape({-1}));
        flats.push_back(np::concatenate(parts, 0));
      }
      std::vector<int64_t> sizes;
      for (size_t k : bucket)
        sizes.push_back(items[k][0].size());
      std::vector<Tensor> sums = all_reduce(flats, mean, over_processes);
      for (size_t j = 0; j < sums.size(); ++j) {
        std::vector<Tensor> pieces = np::split_sizes(sums[j], sizes, 0);
        for (size_t m = 0; m < bucket.size(); ++m)
          results[bucket[m]].push_back(pieces[m].reshape(items[bucket[m]][j].shape()));
      }
    }
    bucket.clear();
  };
  for (size_t k = 0; k < items.size(); ++k) {
    const Tensor &first = items[k][0];
    size_t bytes = size_t(first.size()) * dtype_size(first.dtype());
    auto &[bucket, filled] = open[first.dtype()];
    if (!bucket.empty() && filled + bytes > bucket_bytes) {
      flush(bucket);
      filled = 0;
    }
    bucket.push_back(k);
    filled += bytes;
  }
  for (auto &entry : open)
    flush(entry.second.first);
  return results;
}

} // namespace dlc::npx
