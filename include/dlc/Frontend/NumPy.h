//===- NumPy.h - numpy-style tensor creation and ops (MXNet's np / npx) -------===//
#ifndef DLC_FRONTEND_NUMPY_H
#define DLC_FRONTEND_NUMPY_H

#include "dlc/Frontend/Tensor.h"

#include <optional>
#include <vector>

namespace dlc {

namespace np {

// Creation. `device` defaults to the current DeviceScope (cpu(0) outside any scope).
Tensor zeros(const Shape &shape, DType dtype = DType::f32, std::optional<Device> device = {});
Tensor zeros(const Shape &shape, Device device);
Tensor ones(const Shape &shape, DType dtype = DType::f32, std::optional<Device> device = {});
Tensor ones(const Shape &shape, Device device);
Tensor full(const Shape &shape, double value, DType dtype = DType::f32,
            std::optional<Device> device = {});
/// start, start + step, ... below stop.
Tensor arange(double start, double stop, double step = 1, DType dtype = DType::f32,
              std::optional<Device> device = {});
/// A tensor holding `values` (converted to `dtype`), shaped `shape` (default: 1-D).
Tensor array(const std::vector<double> &values, std::optional<Shape> shape = {},
             DType dtype = DType::f32, std::optional<Device> device = {});
Tensor array(const std::vector<float> &values, std::optional<Shape> shape = {},
             std::optional<Device> device = {});
Tensor array(const std::vector<int64_t> &values, std::optional<Shape> shape = {},
             std::optional<Device> device = {});

namespace random {
/// Seeds the generator of `device` (default: every device, now and later), as
/// `mx.random.seed` does. Each device draws its own sequence, so results do not depend
/// on what other devices do.
void seed(uint64_t seed, std::optional<Device> device = {});
/// Where `device`'s generator stands: its seed and how many draws it has given. A run
/// that saves it with a checkpoint and puts it back (set_state) on resuming draws what
/// the uninterrupted run would have drawn.
struct GeneratorState {
  uint64_t seed = 0;
  uint64_t draws = 0;
};
GeneratorState get_state(Device device);
void set_state(Device device, GeneratorState state);
Tensor uniform(double low, double high, const Shape &shape, std::optional<Device> device = {},
               DType dtype = DType::f32);
Tensor normal(double mean, double stddev, const Shape &shape, std::optional<Device> device = {},
              DType dtype = DType::f32);
/// Integers in [low, high).
Tensor randint(int64_t low, int64_t high, const Shape &shape, std::optional<Device> device = {},
               DType dtype = DType::i64);
} // namespace random

// Element-wise, with numpy broadcasting.
Tensor add(const Tensor &a, const Tensor &b);
Tensor subtract(const Tensor &a, const Tensor &b);
Tensor multiply(const Tensor &a, const Tensor &b);
Tensor divide(const Tensor &a, const Tensor &b);
Tensor power(const Tensor &a, const Tensor &b);
Tensor maximum(const Tensor &a, const Tensor &b);
Tensor minimum(const Tensor &a, const Tensor &b);
/// min(max(x, low), high), either bound optional; the gradient passes where
/// low <= x <= high (MXNet's clip).
Tensor clip(const Tensor &x, std::optional<double> low, std::optional<double> high);
Tensor negative(const Tensor &x);
Tensor exp(const Tensor &x);
Tensor log(const Tensor &x);
Tensor sqrt(const Tensor &x);
Tensor rsqrt(const Tensor &x);
Tensor tanh(const Tensor &x);
Tensor equal(const Tensor &a, const Tensor &b);
Tensor not_equal(const Tensor &a, const Tensor &b);
Tensor less(const Tensor &a, const Tensor &b);
Tensor less_equal(const Tensor &a, const Tensor &b);
Tensor greater(const Tensor &a, const Tensor &b);
Tensor greater_equal(const Tensor &a, const Tensor &b);
/// `x` repeated along its broadcast dimensions to `shape` (numpy rules).
Tensor broadcast_to(const Tensor &x, const Shape &shape);
/// condition ? x : y, element-wise with broadcasting; condition is bool.
Tensor where(const Tensor &condition, const Tensor &x, const Tensor &y);

// Linear algebra.
/// Batched matrix product (rank >= 2; batch dimensions broadcast).
Tensor matmul(const Tensor &a, const Tensor &b, bool transpose_a = false,
              bool transpose_b = false);
/// numpy.dot for 1-D and 2-D operands (vector·vector is a 0-d tensor).
Tensor dot(const Tensor &a, const Tensor &b);

// Reductions over `axes` (empty: all axes).
Tensor sum(const Tensor &x, const std::vector<int64_t> &axes = {}, bool keepdims = false);
Tensor mean(const Tensor &x, const std::vector<int64_t> &axes = {}, bool keepdims = false);
Tensor max(const Tensor &x, const std::vector<int64_t> &axes = {}, bool keepdims = false);
Tensor min(const Tensor &x, const std::vector<int64_t> &axes = {}, bool keepdims = false);
/// Index of the maximum along `axis` (first one on ties), int64.
Tensor argmax(const Tensor &x, int64_t axis, bool keepdims = false);

// Shapes.
Tensor reshape(const Tensor &x, const Shape &shape);
/// Permutes dimensions (default: reverses them, as numpy does).
Tensor transpose(const Tensor &x, const std::vector<int64_t> &axes = {});
Tensor concatenate(const std::vector<Tensor> &tensors, int64_t axis = 0);
/// `sections` equal parts along `axis`.
std::vector<Tensor> split(const Tensor &x, int64_t sections, int64_t axis = 0);
/// Parts of the given sizes along `axis`.
std::vector<Tensor> split_sizes(const Tensor &x, const std::vector<int64_t> &sizes,
                                int64_t axis = 0);

// Indexing.
/// The slices of `a` along `axis` that `indices` (int32 or int64) name, the indices'
/// shape in place of the axis; a negative index counts from the end, one outside
/// [-size, size) is an IndexError naming it (numpy's mode='raise').
Tensor take(const Tensor &a, const Tensor &indices, int64_t axis);
/// take from the flattened `a`, as numpy does without an axis.
Tensor take(const Tensor &a, const Tensor &indices);

} // namespace np

namespace npx {
int num_gpus();
Device gpu(int id = 0);
Device cpu(int id = 0);
Device cpu_pinned(int id = 0);
Tensor relu(const Tensor &x);
/// Gradient of relu: dy where x > 0, else 0.
Tensor relu_backward(const Tensor &dy, const Tensor &x);
Tensor sigmoid(const Tensor &x);
/// The exact GELU, x * Phi(x) (Phi: the standard normal distribution function).
Tensor gelu(const Tensor &x);
/// GELU's tanh approximation (GPT-2's "gelu_new", PyTorch's approximate="tanh"):
/// x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))). Element-wise ops (tanh, mul,
/// add), which dlc-fuse joins into one generated kernel when compiled.
Tensor gelu_tanh(const Tensor &x);
/// Gradient of gelu: dy * (Phi(x) + x * phi(x)).
Tensor gelu_backward(const Tensor &dy, const Tensor &x);
/// The error function (float tensors).
Tensor erf(const Tensor &x);
/// MXNet's softrelu (softplus): log(1 + e^x), x itself above 20.
Tensor softrelu(const Tensor &x);
/// Hard swish: x * min(max(x + 3, 0), 6) / 6.
Tensor hard_swish(const Tensor &x);
/// min(max(x, 0), 6), MobileNetV2's activation.
Tensor relu6(const Tensor &x);
/// Gradient of relu6 from its output y: dy where 0 < y < 6, else 0.
Tensor relu6_backward(const Tensor &dy, const Tensor &y);
/// x / (1 + |x|)
Tensor softsign(const Tensor &x);
/// x * sigmoid(x) (SiLU, Swish with beta = 1).
Tensor silu(const Tensor &x);
/// scale * (x > 0 ? x : alpha * (e^x - 1)) with SELU's fixed alpha and scale.
Tensor selu(const Tensor &x);
/// x > 0 ? x : slope * x, the slope broadcast against x (a scalar, or per channel).
Tensor leaky_relu(const Tensor &x, const Tensor &slope);
Tensor leaky_relu(const Tensor &x, double slope);
/// leaky_relu with one learned slope, or one per channel (axis 1), MXNet's PReLU:
/// `gamma` has shape (1,) or (C,).
Tensor prelu(const Tensor &x, const Tensor &gamma);
/// x > 0 ? x : alpha * (e^x - 1)
Tensor elu(const Tensor &x, double alpha = 1.0);
/// clip(alpha * x + beta, 0, 1), MXNet's hard_sigmoid (its defaults; PyTorch's
/// Hardsigmoid is alpha = 1/6).
Tensor hard_sigmoid(const Tensor &x, double alpha = 0.2, double beta = 0.5);
Tensor softmax(const Tensor &x, int64_t axis = -1);
Tensor log_softmax(const Tensor &x, int64_t axis = -1);
/// MXNet's masked_softmax: softmax(x / temperature) along `axis` over the elements where
/// the boolean `mask` (broadcast to x) is true; the others, and rows with none, get 0.
/// An additive mask (0 or a large negative number) needs no op of its own:
/// softmax(x + mask).
Tensor masked_softmax(const Tensor &x, const Tensor &mask, int64_t axis = -1,
                      double temperature = 1.0);
/// log of masked_softmax, -inf where the mask is false (MXNet's masked_log_softmax).
Tensor masked_log_softmax(const Tensor &x, const Tensor &mask, int64_t axis = -1,
                          double temperature = 1.0);
/// (N, d1, d2, ...) to (N, d1*d2*...).
Tensor batch_flatten(const Tensor &x);
/// The rows of `weight` (input_dim, output_dim) that the ids in `data` name:
/// data.shape + (output_dim,), MXNet's Embedding. Float ids (MXNet 1.x feeds them so)
/// are truncated to integers; an id outside [-input_dim, input_dim) is an IndexError
/// naming it (negative ones count from the end, as take's do).
Tensor embedding(const Tensor &data, const Tensor &weight);
/// take's gradient with respect to its input, float32: zeros with `size` slices along
/// `axis`, each slice of `grad` added where its index points.
Tensor take_backward(const Tensor &grad, const Tensor &indices, int64_t axis, int64_t size);
/// One axis of a slice as Python writes it, begin:end:step; a missing bound is the start
/// or the end of the axis in the step's direction, a negative one counts from the end,
/// and both are clamped to the axis (NumPy's rules).
struct SliceRange {
  std::optional<int64_t> begin, end;
  int64_t step = 1;
};
/// `x[r0, r1, ...]` with one range per leading axis (the others whole), always a copy:
/// MXNet's npx.slice(data, begin, end, step). A step of 0 is a ValueError.
Tensor slice(const Tensor &x, const std::vector<SliceRange> &ranges);
/// Elements [begin, end) along `axis` (negative ones counting from the end), MXNet's
/// slice_axis.
Tensor slice_axis(const Tensor &x, int64_t axis, int64_t begin, std::optional<int64_t> end);
/// slice's gradient: zeros of `shape`, with `grad` where the slice with these positions
/// (resolved, as shape_rules::SliceParams holds them) was taken.
Tensor slice_backward(const Tensor &grad, const std::vector<int64_t> &shape,
                      const std::vector<int64_t> &begin, const std::vector<int64_t> &end,
                      const std::vector<int64_t> &step);
/// Waits for every queued op on every device; rethrows the first error since last time.
void waitall();
} // namespace npx

Tensor operator+(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &a, const Tensor &b);
Tensor operator*(const Tensor &a, const Tensor &b);
Tensor operator/(const Tensor &a, const Tensor &b);
Tensor operator-(const Tensor &x);
Tensor operator+(const Tensor &a, double b);
Tensor operator-(const Tensor &a, double b);
Tensor operator*(const Tensor &a, double b);
Tensor operator/(const Tensor &a, double b);
Tensor operator+(double a, const Tensor &b);
Tensor operator-(double a, const Tensor &b);
Tensor operator*(double a, const Tensor &b);
Tensor operator/(double a, const Tensor &b);
Tensor operator==(const Tensor &a, const Tensor &b);
Tensor operator!=(const Tensor &a, const Tensor &b);
Tensor operator<(const Tensor &a, const Tensor &b);
Tensor operator<=(const Tensor &a, const Tensor &b);
Tensor operator>(const Tensor &a, const Tensor &b);
Tensor operator>=(const Tensor &a, const Tensor &b);

} // namespace dlc

#endif // DLC_FRONTEND_NUMPY_H
