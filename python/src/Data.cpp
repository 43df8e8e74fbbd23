//===- Data.cpp - gluon.data: datasets (also in Python), DataLoader, transforms -===//
#include "Bindings.h"

namespace dlc::python {

namespace {

using namespace gluon::data;

/// A dataset written in Python (__len__ and __getitem__ returning (data, label)); the
/// DataLoader's workers call it, so each call takes the GIL.
class PyDataset : public Dataset {
public:
  size_t size() const override {
    py::gil_scoped_acquire gil;
    py::function len = py::get_override(static_cast<const Dataset *>(this), "__len__");
    if (!len)
      throw UnsupportedError("Dataset: a dataset written in Python must define __len__");
    return len().cast<size_t>();
  }
  Sample get(size_t index) const override {
    py::gil_scoped_acquire gil;
    py::function item = py::get_override(static_cast<const Dataset *>(this), "__getitem__");
    if (!item)
      throw UnsupportedError("Dataset: a dataset written in Python must define __getitem__");
    py::object sample = item(index);
    if (!py::isinstance<py::tuple>(sample) || py::len(sample) != 2)
      throw ValueError("Dataset.__getitem__ must return (data, label); got " +
                       py::repr(sample).cast<std::string>().substr(0, 200));
    py::tuple pair = sample.cast<py::tuple>();
    return {to_tensor(pair[0], std::nullopt, cpu(0)), py::int_(py::object(pair[1])).cast<int64_t>()};
  }
};

/// A tensor -> tensor function with a name: vision.transforms' results.
struct Transform {
  std::function<Tensor(const Tensor &)> fn;
  std::string name;
};

std::function<Tensor(const Tensor &)> transform_of(const py::object &obj) {
  if (py::isinstance<Transform>(obj))
    return obj.cast<const Transform &>().fn;
  if (!PyCallable_Check(obj.ptr()))
    throw py::type_error("transform: expected a callable, got " + py::repr(obj).cast<std::string>());
  return tensor_function(obj);
}

py::tuple sample_tuple(const Sample &s) { return py::make_tuple(s.data, s.label); }

size_t checked_index(const Dataset &d, int64_t index) {
  int64_t n = int64_t(d.size());
  if (index < -n || index >= n)
    throw IndexError("dataset index " + std::to_string(index) + " out of range for " +
                     std::to_string(n) + " samples");
  return size_t(index < 0 ? index + n : index);
}

struct PyDataLoader {
  std::unique_ptr<DataLoader> loader;
  ~PyDataLoader() {
    // Workers may be waiting for the GIL to run a Python transform: let them finish.
    py::gil_scoped_release release;
    loader.reset();
  }
};

struct PyEpoch {
  std::optional<DataLoader::Iterator> it, end;
  ~PyEpoch() {
    py::gil_scoped_release release;
    it.reset();
    end.reset();
  }
};

LastBatch last_batch_of(const py::object &obj) {
  std::string name = obj.is_none() ? "keep" : obj.cast<std::string>();
  if (name == "keep")
    return LastBatch::keep;
  if (name == "discard")
    return LastBatch::discard;
  if (name == "rollover")
    return LastBatch::rollover;
  throw ValueError("DataLoader: last_batch must be 'keep', 'discard' or 'rollover', got '" + name + "'");
}

void bind_transforms(py::module_ &m) {
  namespace t = vision::transforms;
  py::class_<Transform>(m, "Transform", "An image transform (gluon.data.vision.transforms).")
      .def("__call__", [](const Transform &tr, const py::object &x) {
             Tensor input = to_tensor(x, std::nullopt, cpu(0));
             py::gil_scoped_release release;
             return tr.fn(input);
           })
      .def("__repr__", [](const Transform &tr) { return tr.name; });
  m.def("Compose", [](const py::list &transforms) {
    std::vector<t::Transform> fns;
    std::string name = "Compose(";
    for (py::handle item : transforms) {
      fns.push_back(transform_of(py::reinterpret_borrow<py::object>(item)));
      name += (fns.size() > 1 ? ", " : "") + py::repr(item).cast<std::string>();
    }
    return Transform{t::Compose(std::move(fns)), name + ")"};
  }, py::arg("transforms"));
  m.def("Resize", [](const py::object &size, bool keep_ratio, int interpolation) {
    Shape s = to_shape(size);
    if (s.size() == 2 && s[0] != s[1])
      throw UnsupportedError("Resize: dlc resizes to squares (or the shorter side with keep_ratio); got (" +
                             std::to_string(s[0]) + ", " + std::to_string(s[1]) + ")");
    return Transform{t::Resize(int(s[0]), keep_ratio, interpolation), "Resize(" + std::to_string(s[0]) + ")"};
  }, py::arg("size"), py::arg("keep_ratio") = false, py::arg("interpolation") = 1);
  m.def("CenterCrop", [](const py::object &size) {
    Shape s = to_shape(size);
    return Transform{t::CenterCrop(int(s[0])), "CenterCrop(" + std::to_string(s[0]) + ")"};
  }, py::arg("size"));
  m.def("RandomResizedCrop", [](const py::object &size, std::array<double, 2> scale, std::array<double, 2> ratio) {
    Shape s = to_shape(size);
    return Transform{t::RandomResizedCrop(int(s[0]), scale, ratio), "RandomResizedCrop(" + std::to_string(s[0]) + ")"};
  }, py::arg("size"), py::arg("scale") = std::array<double, 2>{0.08, 1.0},
     py::arg("ratio") = std::array<double, 2>{3.0 / 4.0, 4.0 / 3.0});
  m.def("RandomFlipLeftRight", [] { return Transform{t::RandomFlipLeftRight(), "RandomFlipLeftRight()"}; });
  m.def("RandomColorJitter", [](double brightness, double contrast, double saturation) {
    return Transform{t::RandomColorJitter(brightness, contrast, saturation), "RandomColorJitter()"};
  }, py::arg("brightness") = 0.0, py::arg("contrast") = 0.0, py::arg("saturation") = 0.0);
  m.def("ToTensor", [] { return Transform{t::ToTensor(), "ToTensor()"}; });
  m.def("Normalize", [](const py::object &mean, const py::object &std) {
    auto values = [](const py::object &o) {
      std::vector<float> v;
      if (py::isinstance<py::float_>(o) || py::isinstance<py::int_>(o))
        v.push_back(o.cast<float>());
      else
        for (py::handle x : o)
          v.push_back(x.cast<float>());
      return v;
    };
    return Transform{t::Normalize(values(mean), values(std)), "Normalize()"};
  }, py::arg("mean") = 0.0, py::arg("std") = 1.0);
}

} // namespace

void bind_data(py::module_ &m) {
  py::module_ data = m.attr("gluon").cast<py::module_>().def_submodule("data", "gluon.data.");
  py::class_<Dataset, PyDataset, std::shared_ptr<Dataset>>(data, "Dataset", py::dynamic_attr(),
      "Samples by index; subclass it with __len__ and __getitem__ returning (data, label).")
      .def(py::init<>())
      .def("__len__", &Dataset::size)
      .def("__getitem__", [](const Dataset &d, int64_t index) {
             size_t i = checked_index(d, index);
             Sample s;
             {
               py::gil_scoped_release release;
               s = d.get(i);
             }
             return sample_tuple(s);
           })
      .def("transform_first", [](const py::object &self, const py::object &fn, bool) {
             const Dataset &d = self.cast<const Dataset &>();
             py::object result = py::cast(std::const_pointer_cast<Dataset>(d.transform_first(transform_of(fn))));
             // The C++ result keeps the base's C++ part alive; a base written in Python
             // also needs its Python part.
             result.attr("_base") = self;
             return result;
           }, py::arg("fn"), py::arg("lazy") = true);
  py::class_<ArrayDataset, Dataset, std::shared_ptr<ArrayDataset>>(data, "_ArrayDataset")
      .def(py::init([](const py::object &x, const py::object &labels) {
             Tensor t = to_tensor(x, std::nullopt, cpu(0));
             Tensor l = to_tensor(labels, DType::i64, cpu(0));
             return std::make_shared<ArrayDataset>(t, l.to_vector<int64_t>());
           }));
  py::module_ vision = data.def_submodule("vision", "gluon.data.vision.");
  py::class_<vision::MNIST, Dataset, std::shared_ptr<vision::MNIST>>(vision, "_MNIST")
      .def(py::init<std::string, bool>(), py::arg("root"), py::arg("train") = true,
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("images", &vision::MNIST::images, "Every image, (N, 28, 28, 1) uint8.")
      .def_property_readonly("labels", &vision::MNIST::labels);
  vision.def("save_image", [](const py::object &image, const std::string &path) {
    vision::save_image(to_tensor(image, std::nullopt, cpu(0)), path);
  }, py::arg("image"), py::arg("path"), "Writes an HWC uint8 image; the extension picks the format.");
  py::class_<vision::FashionMNIST, vision::MNIST, std::shared_ptr<vision::FashionMNIST>>(vision, "_FashionMNIST")
      .def(py::init<std::string, bool>(), py::arg("root"), py::arg("train") = true,
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly_static("classes", [](py::object) { return vision::FashionMNIST::classes(); });
  py::class_<vision::ImageFolderDataset, Dataset, std::shared_ptr<vision::ImageFolderDataset>>(
      vision, "_ImageFolderDataset")
      .def(py::init([](const std::string &root, int flag, bool skip_unreadable) {
             if (flag != 0 && flag != 1)
               throw ValueError("ImageFolderDataset: flag must be 0 (gray) or 1 (color), got " + std::to_string(flag));
             py::gil_scoped_release release;
             return std::make_shared<vision::ImageFolderDataset>(
                 root, flag ? vision::ImageFolderDataset::Flag::color : vision::ImageFolderDataset::Flag::gray,
                 skip_unreadable);
           }), py::arg("root"), py::arg("flag") = 1, py::arg("skip_unreadable") = false)
      .def_property_readonly("synsets", &vision::ImageFolderDataset::synsets)
      .def_property_readonly("skipped", &vision::ImageFolderDataset::skipped);
  py::module_ transforms = vision.def_submodule("transforms", "gluon.data.vision.transforms.");
  bind_transforms(transforms);

  py::class_<PyEpoch>(data, "_Epoch")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", [](PyEpoch &e) {
        if (!(*e.it != *e.end))
          throw py::stop_iteration();
        Batch batch;
        {
          py::gil_scoped_release release;
          batch = **e.it;
          ++*e.it;
        }
        return py::make_tuple(batch.data, batch.label);
      });
  py::class_<PyDataLoader>(data, "DataLoader",
      "Batches of a dataset, assembled by worker threads ahead of the loop (gluon.data.DataLoader).")
      .def(py::init([](std::shared_ptr<Dataset> dataset, const py::object &batch_size, bool shuffle,
                       const py::object &sampler, const py::object &last_batch, const py::object &batch_sampler,
                       const py::object &batchify_fn, int num_workers, bool pin_memory, int,
                       const py::object &prefetch, bool, int, const py::object &, uint64_t seed) {
             const std::pair<const py::object *, const char *> unsupported[] = {
                 {&sampler, "sampler"}, {&batch_sampler, "batch_sampler"}, {&batchify_fn, "batchify_fn"}};
             for (auto [value, name] : unsupported)
               if (!value->is_none())
                 throw UnsupportedError(std::string("DataLoader: ") + name + " is not supported; dlc "
                                        "batches by stacking samples, in order or shuffled");
             if (batch_size.is_none())
               throw ValueError("DataLoader: batch_size must be given");
             int64_t size = batch_size.cast<int64_t>();
             if (size <= 0)
               throw ValueError("DataLoader: batch_size must be positive, got " + std::to_string(size));
             auto loader = std::make_unique<PyDataLoader>();
             loader->loader = std::make_unique<DataLoader>(
                 std::move(dataset), size_t(size), shuffle, last_batch_of(last_batch), num_workers,
                 prefetch.is_none() ? 2 : prefetch.cast<int>(), seed, pin_memory);
             return loader;
           }),
           py::arg("dataset"), py::arg("batch_size") = py::none(), py::arg("shuffle") = false,
           py::arg("sampler") = py::none(), py::arg("last_batch") = py::none(),
           py::arg("batch_sampler") = py::none(), py::arg("batchify_fn") = py::none(),
           py::arg("num_workers") = 0, py::arg("pin_memory") = false, py::arg("pin_device_id") = 0,
           py::arg("prefetch") = py::none(), py::arg("thread_pool") = false, py::arg("timeout") = 120,
           py::arg("try_nopython") = py::none(), py::arg("seed") = 0,
           py::keep_alive<1, 2>()) // a dataset written in Python lives as long as its loader
      .def("__len__", [](const PyDataLoader &l) { return l.loader->size(); })
      .def("shard", [](PyDataLoader &l, size_t part, size_t parts) { l.loader->shard(part, parts); },
           py::arg("part"), py::arg("parts"),
           "This process's share of every batch in a job of `parts` processes: the "
           "part-th of `parts` equal, consecutive slices (dlc.dist.rank(), dlc.dist.size()).")
      .def("set_epoch", [](PyDataLoader &l, uint64_t epoch) { l.loader->set_epoch(epoch); },
           py::arg("epoch"), "The next epoch's shuffle is the one of epoch `epoch` (from 0).")
      .def("__iter__", [](PyDataLoader &l) {
             auto e = std::make_unique<PyEpoch>();
             py::gil_scoped_release release;
             e->it.emplace(l.loader->begin());
             e->end.emplace(l.loader->end());
             return e;
           }, py::keep_alive<0, 1>());
}

} // namespace dlc::python
