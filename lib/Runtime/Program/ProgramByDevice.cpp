//===- ProgramByDevice.cpp - running a program over several devices -----------===//
//
// Each value gets a buffer of its own for the run (arena values: a region of their
// device's arena), so that the engine orders tasks by the values they touch, not by
// whole arenas, which would chain the devices together. Consecutive kernel steps of one
// device are one task; each copy and all-reduce is its own.
//
//===----------------------------------------------------------------------===//
#include "dlc/Runtime/Program/Program.h"

#include "dlc/Runtime/Distributed/Collectives.h"

#include "DeviceBytes.h"
#include "dlc/Core/Error.h"
#include "dlc/Runtime/Engine/Numerics.h"
#include "dlc/Runtime/Distributed/ProcessGroup.h"
#include "dlc/Runtime/Engine/Profile.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace dlc {

namespace {

/// Enqueues each GPU's rank of an all-reduce on its own queue (NCCL; see
/// Collectives.cpp), over the job's processes when the step spans them. Input and output
/// k live on step.devices[k].
template <typename RefOf, typename BufferOf>
void enqueueGpuAllReduce(const ProgramStep &step, RefOf &&refOf, BufferOf &&bufferOf) {
  std::vector<AllReduceRank> ranks;
  for (size_t rank = 0; rank < step.devices.size(); ++rank)
    ranks.push_back({step.devices[rank], refOf(step.inputs[rank]), refOf(step.outputs[rank]),
                     bufferOf(step.inputs[rank]), bufferOf(step.outputs[rank])});
  enqueue_gpu_all_reduce(ranks, step.reduce_kind == 1, step.processes != 1);
}

/// The job's group, checked against the processes the step was compiled for.
ProcessGroup &groupOf(const ProgramStep &step) {
  ProcessGroup &group = process_group();
  if (group.size() != step.processes)
    throw Error("all_reduce: the program sums over " + std::to_string(step.processes) +
                " processes, but this job has " + std::to_string(group.size()) +
                " (compile the step in the job that runs it)");
  return group;
}

/// Enqueues an all-reduce that spans the processes of a job through the process group:
/// the communication queue sums every process's replicas (ProcessGroup::all_reduce_sum: rank order,
/// then device order, as one process with all the devices adds them) and the devices copy
/// the result (the first host device's output is the sum itself); GPUs' parts come to the
/// host first (GPUs take this path only when
/// gpu_sums_through_host() says so; NCCL spans the processes otherwise). Input and output
/// k live on step.devices[k].
template <typename RefOf, typename BufferOf>
void enqueueAllReduceOverProcesses(const ProgramStep &step, RefOf &&refOf,
                                   BufferOf &&bufferOf) {
  ProcessGroup &group = groupOf(step);
  const bool onHost = step.devices.front().is_host();
  for (Device device : step.devices)
    if (device.is_host() != onHost)
      throw UnsupportedError("all_reduce: the devices of one all-reduce must all be GPUs or "
                             "all be CPUs");
  TensorRef first = refOf(step.outputs[0]);
  if (first.dtype != DType::f32)
    throw DTypeError("all_reduce: the sum over processes takes float32, got " +
                     std::string(dtype_name(first.dtype)));
  const size_t bytes = size_t(first.numel()) * sizeof(float);
  // Host memory for a GPU's part or for the sum, ordered by the engine like any value.
  auto staged = [&](TensorRef &ref) {
    auto buffer = std::make_shared<Buffer>(allocate(cpu(), bytes));
    ref.data = buffer->data();
    return buffer;
  };
  std::vector<TensorRef> inputs;
  std::vector<std::shared_ptr<Buffer>> reads;
  for (int in : step.inputs) {
    TensorRef part = refOf(in);
    if (onHost) {
      reads.push_back(bufferOf(in));
    } else {
      reads.push_back(staged(part));
      enqueue_copy(bufferOf(in), refOf(in).data, reads.back(), part.data, bytes);
    }
    inputs.push_back(part);
  }
  TensorRef sum = first;
  std::shared_ptr<Buffer> sumBuffer = onHost ? bufferOf(step.outputs[0]) : staged(sum);
  const bool mean = step.reduce_kind == 1;
  // Off the devices' queues: the rest of the backward goes on while this waits for the
  // other processes.
  enqueue_communication(reads, {sumBuffer}, [&group, inputs, sum, mean] {
    std::vector<const float *> parts;
    for (const TensorRef &input : inputs)
      parts.push_back(input.as<float>());
    float *out = sum.as<float>();
    const int64_t n = sum.numel();
    // Timed as its own entry (DLC_PROFILE=1): the time a step spends in the processes' sum.
    KernelProfile::timed("all_reduce over processes", [&] { group.all_reduce_sum(parts, out, n); });
    if (mean) {
      const float scale = 1.f / float(int64_t(inputs.size()) * group.size());
      for (int64_t i = 0; i < n; ++i)
        out[i] *= scale;
    }
  });
  for (size_t d = onHost ? 1 : 0; d < step.devices.size(); ++d)
    enqueue_copy(sumBuffer, sum.data, bufferOf(step.outputs[d]), refOf(step.outputs[d]).data,
                 bytes);
}

} // namespace

void Program::runByDevice(const std::vector<BoundBuffer> &args,
                          const std::vector<BoundBuffer> &outs, std::vector<int64_t> seeds,
                          bool reference) const {
  // Storage: the caller's arguments and results; a region of its device's arena for every
  // other value; views share their root's buffer.
  std::vector<BoundBuffer> at(values.size());
  std::vector<std::shared_ptr<Storage>> arenaStorage;
  for (const Arena &arena : arenas)
    arenaStorage.push_back(allocate(arena.device, std::max<size_t>(arena.bytes, 1)));
  for (size_t id = 0; id < values.size(); ++id) {
    const ProgramValue &v = values[id];
    if (v.alias_of >= 0)
      continue;
    switch (v.storage) {
    case StorageKind::argument:
      at[id] = {args[size_t(v.index)].buffer, args[size_t(v.index)].offset + v.offset};
      break;
    case StorageKind::result:
      at[id] = {outs[size_t(v.index)].buffer, outs[size_t(v.index)].offset + v.offset};
      break;
    case StorageKind::arena:
      at[id] = {std::make_shared<Buffer>(std::make_shared<Storage>(
                    arenaStorage[size_t(v.index)], v.offset, std::max<size_t>(v.bytes(), 1))),
                0};
      break;
    }
  }
  for (size_t id = 0; id < values.size(); ++id) {
    int root = int(id);
    while (values[size_t(root)].alias_of >= 0)
      root = values[size_t(root)].alias_of;
    if (root != int(id))
      at[id] = {at[size_t(root)].buffer,
                at[size_t(root)].offset + (values[id].offset - values[size_t(root)].offset)};
  }
  auto self = shared_from_this();
  auto ref = [&](int id) -> TensorRef {
    const ProgramValue &v = values[size_t(id)];
    return {static_cast<char *>(at[size_t(id)].buffer->data()) + at[size_t(id)].offset, v.shape,
            v.dtype, v.layout};
  };
  // Consecutive kernel steps of one device run as one task: fewer engine round trips.
  struct Segment {
    Device device;
    std::vector<std::shared_ptr<Buffer>> reads, writes;
    std::vector<std::function<void()>> work;
  } segment;
  auto flushSegment = [&] {
    if (segment.work.empty())
      return;
    auto unique = [](std::vector<std::shared_ptr<Buffer>> &list) {
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
    };
    unique(segment.reads);
    unique(segment.writes);
    segment.reads.erase(std::remove_if(segment.reads.begin(), segment.reads.end(),
                                       [&](const std::shared_ptr<Buffer> &b) {
                                         return std::binary_search(segment.writes.begin(),
                                                                   segment.writes.end(), b);
                                       }),
                        segment.reads.end());
    enqueue(segment.device, segment.reads, segment.writes,
            [work = std::move(segment.work)] {
              for (const auto &step : work)
                step();
            });
    segment = Segment{};
  };
  auto addToSegment = [&](Device device, const std::vector<std::shared_ptr<Buffer>> &reads,
                          const std::vector<std::shared_ptr<Buffer>> &writes,
                          std::function<void()> work) {
    if (!segment.work.empty() && segment.device != device)
      flushSegment();
    segment.device = device;
    segment.reads.insert(segment.reads.end(), reads.begin(), reads.end());
    segment.writes.insert(segment.writes.end(), writes.begin(), writes.end());
    segment.work.push_back(std::move(work));
  };

  size_t nextSeed = 0;
  for (const ProgramStep &step : steps) {
    std::vector<std::shared_ptr<Buffer>> reads, writes;
    for (int in : step.inputs)
      reads.push_back(at[size_t(in)].buffer);
    for (int out : step.outputs)
      writes.push_back(at[size_t(out)].buffer);
    if (step.kind != ProgramStep::Kind::kernel)
      flushSegment(); // transfers and collectives are their own tasks
    if (step.kind == ProgramStep::Kind::all_reduce && step.processes != 1) {
      groupOf(step);
      bool onGpus = std::all_of(step.devices.begin(), step.devices.end(),
                                [](Device d) { return d.kind == DeviceKind::gpu; });
      if (onGpus && !gpu_sums_through_host())
        enqueueGpuAllReduce(step, [&](int id) { return ref(id); },
                            [&](int id) { return at[size_t(id)].buffer; });
      else
        enqueueAllReduceOverProcesses(step, [&](int id) { return ref(id); },
                                      [&](int id) { return at[size_t(id)].buffer; });
      continue;
    }
    if (step.kind == ProgramStep::Kind::all_reduce) {
      bool onGpus = std::all_of(step.devices.begin(), step.devices.end(),
                                [](Device d) { return d.kind == DeviceKind::gpu; });
      if (onGpus) {
        enqueueGpuAllReduce(step, [&](int id) { return ref(id); },
                            [&](int id) { return at[size_t(id)].buffer; });
        continue;
      }
      if (!std::all_of(step.devices.begin(), step.devices.end(),
                       [](Device d) { return d.is_host(); }))
        throw UnsupportedError("all_reduce: the devices of one all-reduce must all be GPUs or "
                               "all be CPUs");

      // Each device sums every replica in the same order: bit-identical results.
      std::vector<TensorRef> inputs;
      for (int in : step.inputs)
        inputs.push_back(ref(in));
      for (size_t d = 0; d < step.devices.size(); ++d) {
        TensorRef out = ref(step.outputs[d]);
        bool mean = step.reduce_kind == 1;
        enqueue(step.devices[d], reads, {at[size_t(step.outputs[d])].buffer},
                [self, inputs, out, mean] {
                  if (out.dtype != DType::f32)
                    throw DTypeError("all_reduce: the CPU collective sums float32, got " +
                                     std::string(dtype_name(out.dtype)));
                  // One pass, replicas added in device order: every device gets the
                  // same bits.
                  int64_t n = out.numel();
                  float *o = out.as<float>();
                  const float *first = inputs[0].as<float>();
                  float scale = mean ? 1.f / float(inputs.size()) : 1.f;
#pragma omp parallel for if (n >= 1 << 16)
                  for (int64_t i = 0; i < n; ++i) {
                    float sum = first[i];
                    for (size_t k = 1; k < inputs.size(); ++k)
                      sum += inputs[k].as<float>()[i];
                    o[i] = mean ? sum * scale : sum;
                  }
                });
      }
      continue;
    }
    if (step.kind == ProgramStep::Kind::copy) {
      const BoundBuffer &from = at[size_t(step.inputs[0])], &to = at[size_t(step.outputs[0])];
      size_t bytes = values[size_t(step.outputs[0])].bytes();
      enqueue_copy(from.buffer, ref(step.inputs[0]).data, to.buffer, ref(step.outputs[0]).data,
                   bytes);
      continue;
    }
    if (step.fused) {
      std::vector<char *> ins, outs;
      for (int in : step.inputs)
        ins.push_back(static_cast<char *>(ref(in).data));
      for (int out : step.outputs)
        outs.push_back(static_cast<char *>(ref(out).data));
      std::shared_ptr<const FusedElementwise> body = step.fused;
      const std::string *op = &body->name;
      std::vector<TensorRef> inRefs, outRefs; // for the numerics guard
      for (int in : step.inputs)
        inRefs.push_back(ref(in));
      for (int out : step.outputs)
        outRefs.push_back(ref(out));
      Device device = step.device;
      addToSegment(step.device, reads, writes,
                   [self, body, ins, outs, reference, op, device, inRefs, outRefs] {
                     KernelProfile::timed(
                         *op, [&] { run_fused_elementwise(*body, ins, outs, reference, device); });
                     if (check_numerics_enabled())
                       check_finite_outputs(op->c_str(), device, inRefs, outRefs);
                   });
      continue;
    }
    auto attrs = std::make_shared<Attrs>(step.attrs);
    if (step.fresh_seed)
      attrs->set("seed", seeds[nextSeed++]);
    KernelArgs call;
    call.attrs = nullptr;
    call.device = step.device;
    for (int in : step.inputs)
      call.inputs.push_back(ref(in));
    for (int out : step.outputs)
      call.outputs.push_back(ref(out));
    KernelFn kernel = reference ? step.kernels.reference : step.kernels.fast;
    const std::string *op = &step.op;
    addToSegment(step.device, reads, writes, [self, call, attrs, kernel, op]() mutable {
      call.attrs = attrs.get();
      call.op = op->c_str();
      KernelProfile::timed(*op, [&] { kernel(call); });
      if (check_numerics_enabled())
        check_finite_outputs(call.op, call.device, call.inputs, call.outputs);
    });
  }
  flushSegment();
  for (const auto &[value, argument] : updates) {
    TensorRef from = ref(value), to = ref(arguments[size_t(argument)]);
    size_t bytes = values[size_t(value)].bytes();
    Device device = values[size_t(arguments[size_t(argument)])].device;
    enqueue(device, {at[size_t(value)].buffer}, {at[size_t(arguments[size_t(argument)])].buffer},
            [self, device, from, to, bytes] { move_bytes(device, to.data, from.data, bytes); });
  }
}


} // namespace dlc
