//===- Creation.cpp - zeros, ones, full, arange, array, random ---------------===//
#include "../OpDefinitions.h"

#include "dlc/Frontend/Trace.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Core/OpFacts.h"

#include <cmath>
#include <map>
#include <mutex>

namespace dlc {

namespace {

std::vector<TensorMeta> inferCreation(const std::vector<TensorMeta> &, const Attrs &attrs) {
  Shape shape = attrs.get_ints("shape", {});
  for (int64_t d : shape)
    if (d < 0)
      throw ShapeError("shape " + shape_rules::str(shape) + " has a negative dimension");
  return {{shape, DType(attrs.get_int("dtype", int64_t(DType::f32)))}};
}

Tensor create(const char *name, const Shape &shape, DType dtype, std::optional<Device> device,
              Attrs attrs) {
  attrs.set("shape", shape).set("dtype", int64_t(dtype));
  return invoke1(find_op(name), {}, attrs, device ? *device : current_device());
}

/// Per-device random state: a seed and how many draws were taken from it. Each random
/// op takes a fresh kernel seed from its device's state at call time, in program order,
/// so results are reproducible whatever the queues' timing.
struct RandomState {
  uint64_t seed = 0x5eed;
  uint64_t draws = 0;
};

struct RandomStates {
  std::mutex mutex;
  std::map<Device, RandomState> devices;
  std::optional<uint64_t> globalSeed; // applies to devices seen later too
};

RandomStates &randomStates() {
  static RandomStates *states = new RandomStates;
  return *states;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

Device orCurrent(std::optional<Device> device) { return device ? *device : current_device(); }

Tensor arangeConstant(double start, double step, int64_t count, DType dtype,
                      std::optional<Device> device);

} // namespace

int64_t detail::next_kernel_seed(Device device) {
  // A trace records random ops without running them: their seeds are drawn when the
  // compiled program runs, so the trace must not consume any (initializers that run
  // during a trace pause it and do draw).
  if (trace::active())
    return 0;
  RandomStates &states = randomStates();
  std::lock_guard<std::mutex> lock(states.mutex);
  auto [it, inserted] = states.devices.try_emplace(device);
  if (inserted && states.globalSeed)
    it->second.seed = *states.globalSeed;
  RandomState &state = it->second;
  // Mixing in the device keeps two devices seeded alike from drawing the same numbers.
  uint64_t mixed = splitmix64(state.seed ^ splitmix64(state.draws++) ^
                              (uint64_t(device.kind) << 48) ^ uint64_t(device.id));
  return int64_t(mixed >> 1);
}

void detail::register_creation_ops() {
  register_op(caller_runnable({"full", ops::constant, inferCreation}));
  register_op(caller_runnable({"arange", "eager.arange", inferCreation}));
  register_op(caller_runnable({"random_uniform", ops::random_uniform, inferCreation}));
  register_op(caller_runnable({"random_normal", ops::random_normal, inferCreation}));
  register_op(caller_runnable({"random_randint", "eager.random_randint", inferCreation}));
}

Tensor np::full(const Shape &shape, double value, DType dtype, std::optional<Device> device) {
  return create("full", shape, dtype, device, Attrs{{"value", value}});
}
Tensor np::zeros(const Shape &shape, DType dtype, std::optional<Device> device) {
  return full(shape, 0.0, dtype, device);
}
Tensor np::zeros(const Shape &shape, Device device) { return zeros(shape, DType::f32, device); }
Tensor np::ones(const Shape &shape, DType dtype, std::optional<Device> device) {
  return full(shape, 1.0, dtype, device);
}
Tensor np::ones(const Shape &shape, Device device) { return ones(shape, DType::f32, device); }

Tensor np::arange(double start, double stop, double step, DType dtype,
                  std::optional<Device> device) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    throw ValueError("arange(" + std::to_string(start) + ", " + std::to_string(stop) + ", " +
                     std::to_string(step) + "): needs finite bounds and a non-zero step");
  int64_t count = std::max<int64_t>(0, int64_t(std::ceil((stop - start) / step)));
  if (trace::active())
    return arangeConstant(start, step, count, dtype, device);
  return create("arange", {count}, dtype, device, Attrs{{"start", start}, {"step", step}});
}

namespace {
/// Writes `value` as element `i` of a host buffer of `dtype`.
template <typename V> void writeElement(void *data, DType dtype, size_t i, V value) {
  switch (dtype) {
  case DType::f32:
    static_cast<float *>(data)[i] = float(value);
    break;
  case DType::f16:
    static_cast<float16 *>(data)[i] = to_float16(float(value));
    break;
  case DType::bf16:
    static_cast<bfloat16 *>(data)[i] = to_bfloat16(float(value));
    break;
  case DType::i32:
    static_cast<int32_t *>(data)[i] = int32_t(value);
    break;
  case DType::i64:
    static_cast<int64_t *>(data)[i] = int64_t(value);
    break;
  case DType::u8:
    static_cast<uint8_t *>(data)[i] = uint8_t(value);
    break;
  case DType::boolean:
    static_cast<bool *>(data)[i] = value != 0;
    break;
  }
}

/// A tensor of `values` on `device`: filled on the host (a fresh buffer has no pending
/// work, so the calling thread may write it), then copied when `device` is elsewhere.
template <typename V>
Tensor fromValues(const std::vector<V> &values, std::optional<Shape> shape, DType dtype,
                  std::optional<Device> device) {
  Shape target = shape ? *shape : Shape{int64_t(values.size())};
  if (shape_rules::numElements(target) != int64_t(values.size()))
    throw ShapeError("array: " + std::to_string(values.size()) +
                     " values cannot fill shape " + shape_rules::str(target));
  Device where = orCurrent(device);
  Tensor host = Tensor::empty(target, dtype, where.is_host() ? where : cpu(0));
  for (size_t i = 0; i < values.size(); ++i)
    writeElement(host.data(), dtype, i, values[i]);
  return host.to(where);
}
} // namespace

namespace {
/// arange inside a hybridized forward: its values depend on its arguments only, so they
/// are made now, on the host, and the trace captures them as a constant of the program.
Tensor arangeConstant(double start, double step, int64_t count, DType dtype,
                      std::optional<Device> device) {
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    values[size_t(i)] = start + double(i) * step;
  return fromValues(values, std::nullopt, dtype, device);
}
} // namespace

Tensor np::array(const std::vector<double> &values, std::optional<Shape> shape, DType dtype,
                 std::optional<Device> device) {
  return fromValues(values, shape, dtype, device);
}

Tensor np::array(const std::vector<float> &values, std::optional<Shape> shape,
                 std::optional<Device> device) {
  return fromValues(values, shape, DType::f32, device);
}

Tensor np::array(const std::vector<int64_t> &values, std::optional<Shape> shape,
                 std::optional<Device> device) {
  return fromValues(values, shape, DType::i64, device);
}

void np::random::seed(uint64_t seed, std::optional<Device> device) {
  RandomStates &states = randomStates();
  std::lock_guard<std::mutex> lock(states.mutex);
  if (device) {
    states.devices[*device] = RandomState{seed, 0};
    return;
  }
  states.globalSeed = seed;
  for (auto &entry : states.devices)
    entry.second = RandomState{seed, 0};
}

np::random::GeneratorState np::random::get_state(Device device) {
  RandomStates &states = randomStates();
  std::lock_guard<std::mutex> lock(states.mutex);
  auto [it, inserted] = states.devices.try_emplace(device);
  if (inserted && states.globalSeed)
    it->second.seed = *states.globalSeed;
  return {it->second.seed, it->second.draws};
}

void np::random::set_state(Device device, GeneratorState state) {
  RandomStates &states = randomStates();
  std::lock_guard<std::mutex> lock(states.mutex);
  states.devices[device] = RandomState{state.seed, state.draws};
}

Tensor np::random::uniform(double low, double high, const Shape &shape,
                           std::optional<Device> device, DType dtype) {
  if (!(low < high))
    throw ValueError("random::uniform: needs low < high, got low = " + std::to_string(low) +
                     ", high = " + std::to_string(high));
  Device where = orCurrent(device);
  return create("random_uniform", shape, dtype, where,
                Attrs{{"low", low}, {"high", high}, {"seed", detail::next_kernel_seed(where)}});
}

Tensor np::random::normal(double mean, double stddev, const Shape &shape,
                          std::optional<Device> device, DType dtype) {
  if (!(stddev > 0))
    throw ValueError("random::normal: needs stddev > 0, got " + std::to_string(stddev));
  Device where = orCurrent(device);
  return create("random_normal", shape, dtype, where,
                Attrs{{"mean", mean}, {"stddev", stddev}, {"seed", detail::next_kernel_seed(where)}});
}

Tensor np::random::randint(int64_t low, int64_t high, const Shape &shape,
                           std::optional<Device> device, DType dtype) {
  if (!(low < high))
    throw ValueError("random::randint: needs low < high, got low = " + std::to_string(low) +
                     ", high = " + std::to_string(high));
  Device where = orCurrent(device);
  return create("random_randint", shape, dtype, where,
                Attrs{{"low", low}, {"high", high}, {"seed", detail::next_kernel_seed(where)}});
}

int npx::num_gpus() { return dlc::num_gpus(); }
Device npx::gpu(int id) { return dlc::gpu(id); }
Device npx::cpu(int id) { return dlc::cpu(id); }
Device npx::cpu_pinned(int id) { return dlc::cpu_pinned(id); }
void npx::waitall() { dlc::waitall(); }

} // namespace dlc
