//===- Parameter.h - trainable tensors with one copy per device (gluon) -------===//
#ifndef DLC_GLUON_PARAMETER_H
#define DLC_GLUON_PARAMETER_H

#include "dlc/Frontend/Tensor.h"
#include "dlc/Gluon/Initializer.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dlc::gluon {

/// A parameter (Gluon's Parameter): a name, a shape whose unknown dimensions (0) are
/// filled in by the first forward, and one copy of its value (and gradient) on each
/// device it was initialized on, the layout data parallelism needs.
class Parameter {
public:
  Parameter(std::string name, Shape shape, DType dtype = DType::f32,
            init::InitializerPtr init = nullptr, GradReq grad_req = GradReq::write);

  const std::string &name() const { return name_; }
  const Shape &shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  GradReq grad_req() const { return grad_req_; }
  void set_grad_req(GradReq req);
  /// Whether every dimension is known.
  bool shape_known() const;

  /// Allocates and fills a copy on each of `devices` (the same values on all) with the
  /// parameter's own initializer if it has one, else `fallback`. Does nothing if already
  /// initialized, unless `force_reinit`. With unknown dimensions the work is deferred to
  /// set_shape() (Gluon's deferred initialization).
  void initialize(const init::InitializerPtr &fallback, const std::vector<Device> &devices,
                  bool force_reinit = false);
  bool initialized() const { return !copies_.empty(); }
  /// Fills unknown dimensions (first forward); finishes a deferred initialization.
  /// Throws ShapeError when `shape` contradicts a known dimension.
  void set_shape(const Shape &shape);

  /// The copy on `device`; throws naming the devices the parameter lives on.
  Tensor data(Device device) const;
  /// The copy on the first device.
  Tensor data() const;
  std::vector<Tensor> list_data() const;
  Tensor grad(Device device) const;
  std::vector<Tensor> list_grad() const;
  std::vector<Device> list_devices() const { return devices_; }

  /// Copies `value` into every copy (shapes and dtypes must match; the dtype is converted).
  void set_data(const Tensor &value);
  /// Keeps one copy per listed device, moving values where needed (values are kept).
  void reset_device(const std::vector<Device> &devices);
  /// Sets every copy's gradient to zero.
  void zero_grad();
  /// Converts the parameter (and its copies) to `dtype`.
  void cast(DType dtype);

private:
  void allocate(const init::InitializerPtr &init, const std::vector<Device> &devices);
  std::string where() const;

  std::string name_;
  Shape shape_;
  DType dtype_;
  init::InitializerPtr init_;
  GradReq grad_req_;
  std::vector<Device> devices_;
  std::map<Device, Tensor> copies_;
  // A deferred initialize() waiting for set_shape().
  init::InitializerPtr deferredInit_;
  std::vector<Device> deferredDevices_;
};

using ParameterPtr = std::shared_ptr<Parameter>;

/// Parameters by hierarchical name ("conv1.0.weight"), in registration order.
class ParameterDict {
public:
  void add(const std::string &name, ParameterPtr parameter);
  size_t size() const { return order_.size(); }
  bool contains(const std::string &name) const { return byName_.count(name) != 0; }
  /// Throws naming the closest known parameters when `name` is unknown.
  const ParameterPtr &operator[](const std::string &name) const;
  /// The parameters whose names match `regex` (ECMAScript, searched anywhere in the
  /// name), e.g. ".*weight" or "conv1\\.".
  ParameterDict select(const std::string &regex) const;
  std::vector<std::string> keys() const { return order_; }
  std::vector<ParameterPtr> values() const;

  void initialize(const init::InitializerPtr &init, const std::vector<Device> &devices,
                  bool force_reinit = false);
  void reset_device(const std::vector<Device> &devices);
  void zero_grad();
  void set_grad_req(GradReq req);
  /// Overwrites every initialized parameter, on every process of the job, with its
  /// values on process `root` (dist::broadcast), on all of its devices: processes that
  /// initialized or loaded differently start alike. Nothing to do in a job of one.
  void broadcast(int root = 0);

private:
  std::vector<std::string> order_;
  std::map<std::string, ParameterPtr> byName_;
};

} // namespace dlc::gluon

#endif // DLC_GLUON_PARAMETER_H
