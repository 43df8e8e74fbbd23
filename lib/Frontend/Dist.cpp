//===- Dist.cpp - training as one of several processes --------------------------===//
#include "dlc/Frontend/Dist.h"

#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/OpRegistry.h"
#include "dlc/Runtime/Engine/Engine.h"
#include "dlc/Runtime/Distributed/ProcessGroup.h"
#include "dlc/Runtime/Engine/Profile.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace dlc::dist {

void init() {
  ProcessGroup &group = join_process_group();
  if (group.local_size() > 1) {
    // The processes on this host share its cores: one with one device then computes
    // with the threads it would have as one of several devices of one process.
    int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    set_host_cores(std::max(1, cores / group.local_size()));
  }
}

int rank() { return process_group().rank(); }
int size() { return process_group().size(); }
int local_rank() { return process_group().local_rank(); }
int local_size() { return process_group().local_size(); }

std::string describe() {
  ProcessGroup &group = process_group();
  if (group.size() == 1)
    return "one process";
  return std::to_string(group.size()) + " processes (" + group.description() + ")";
}

void barrier() { process_group().barrier(); }

std::vector<Device> local_devices(const std::vector<Device> &job) {
  const size_t processes = size_t(size());
  if (job.empty() || job.size() % processes != 0) {
    std::string names;
    for (Device d : job)
      names += (names.empty() ? "" : ", ") + d.str();
    throw ValueError("dist: the job's " + std::to_string(job.size()) + " devices (" + names +
                     ") do not divide among its " + std::to_string(processes) +
                     " processes; give each process as many (e.g. one: --devices "
                     "cpu:0,cpu:1 for mpirun -np 2)");
  }
  const size_t each = job.size() / processes;
  auto first = job.begin() + std::ptrdiff_t(size_t(rank()) * each);
  return {first, first + std::ptrdiff_t(each)};
}

Tensor all_reduce(const std::vector<Tensor> &parts) {
  if (parts.empty())
    throw ValueError("dist.all_reduce: no tensors");
  autograd::Pause pause;
  const Tensor &head = parts.front();
  const Device home = head.device();
  std::vector<Tensor> onHost;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor &t = parts[i];
    if (t.shape() != head.shape() || t.dtype() != DType::f32)
      throw DTypeError("dist.all_reduce: part #" + std::to_string(i) + " is " +
                       dtype_name(t.dtype()) + " " + shape_rules::str(t.shape()) +
                       "; expected float32 " + shape_rules::str(head.shape()) +
                       " like part #0");
    // The sum reads host memory in the plain layout; GPUs' parts come over first.
    onHost.push_back(t.device().is_host() ? detail::plain(t) : t.copyto(cpu()));
  }
  const Device where = onHost.front().device();
  Tensor sum = Tensor::empty(head.shape(), DType::f32, where);
  std::vector<std::shared_ptr<Buffer>> reads;
  std::vector<const float *> data;
  for (const Tensor &t : onHost) {
    reads.push_back(t.buffer());
    data.push_back(static_cast<const float *>(t.data()));
  }
  auto *out = static_cast<float *>(sum.data());
  const int64_t count = sum.size();
  ProcessGroup *group = &process_group();
  // Kept alive by the task's buffers; queued after the work that writes the parts, on the
  // communication queue, where every sum over the processes runs in program order.
  enqueue_communication(reads, {sum.buffer()},
          [group, data, out, count] {
            KernelProfile::timed("all_reduce over processes",
                                 [&] { group->all_reduce_sum(data, out, count); });
          });
  return home.is_host() ? sum : sum.copyto(home);
}

void broadcast(Tensor &tensor, int root) {
  ProcessGroup &group = process_group();
  if (group.size() == 1)
    return;
  autograd::Pause pause;
  if (tensor.device().is_host() && tensor.impl()->layout == Layout::plain) {
    tensor.buffer()->wait_to_write();
    group.broadcast(tensor.data(), tensor.nbytes(), root);
    return;
  }
  Tensor host = detail::plain(tensor.device().is_host() ? tensor : tensor.copyto(cpu()));
  host = host.copyto(cpu()); // a tensor of its own, whatever plain() returned
  host.buffer()->wait_to_write();
  group.broadcast(host.data(), host.nbytes(), root);
  host.copyto(tensor);
}

void abort(int code) {
  process_group().abort(code);
  std::_Exit(code); // not reached: the group's abort ends the process
}

} // namespace dlc::dist
