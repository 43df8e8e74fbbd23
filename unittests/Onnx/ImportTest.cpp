//===- ImportTest.cpp - ONNX files read, imported, run, trained and compiled ---===//
//
// Models are written here with ONNX's own protobuf messages, as an exporter writes them,
// then read back through dlc's reader.
//
//===----------------------------------------------------------------------===//
#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/CompiledModel.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Gluon/Trainer.h"
#include "dlc/Hybridize/ModelCompiler.h"
#include "dlc/Onnx/Import.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <limits>

using namespace dlc;
namespace fs = std::filesystem;

namespace {

/// A folder of the test's own under the system's temporary folder.
fs::path scratch(const std::string &name) {
  fs::path path = fs::temp_directory_path() / ("dlc-onnx-test-" + name);
  fs::remove_all(path);
  fs::create_directories(path);
  return path;
}

::onnx::TensorProto floats(const std::string &name, const std::vector<int64_t> &dims,
                           const std::vector<float> &values) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char *>(values.data()), values.size() * 4));
  return t;
}

::onnx::TensorProto ints(const std::string &name, const std::vector<int64_t> &values) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::INT64);
  t.add_dims(int64_t(values.size()));
  for (int64_t v : values)
    t.add_int64_data(v);
  return t;
}

::onnx::NodeProto *node(::onnx::GraphProto &g, const std::string &op,
                        const std::vector<std::string> &inputs,
                        const std::vector<std::string> &outputs, const std::string &name = "") {
  ::onnx::NodeProto *n = g.add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? outputs[0] : name);
  for (const std::string &i : inputs)
    n->add_input(i);
  for (const std::string &o : outputs)
    n->add_output(o);
  return n;
}

void intAttr(::onnx::NodeProto *n, const std::string &name, int64_t value) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(value);
}

void declare(::onnx::ValueInfoProto *v, const std::string &name, const std::vector<int64_t> &dims,
             int32_t dtype = ::onnx::TensorProto::FLOAT) {
  v->set_name(name);
  auto *t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(dtype);
  for (int64_t d : dims) {
    auto *dim = t->mutable_shape()->add_dim();
    if (d >= 0)
      dim->set_dim_value(d);
    else
      dim->set_dim_param("batch");
  }
}

::onnx::ModelProto model(int64_t opset = 17) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("dlc-test");
  m.add_opset_import()->set_version(opset);
  return m;
}

std::string save(const ::onnx::ModelProto &m, const fs::path &path) {
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
  return path.string();
}

std::vector<float> values(int64_t n, float scale) {
  std::vector<float> v(size_t(n), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    v[size_t(i)] = scale * float((i * 37) % 11 - 5) / 5.0f;
  return v;
}

/// y = Reshape(x, concat(Shape(x)[0], -1)) · W + B, the flatten exporters write with
/// shape arithmetic, for an input (batch, 3, 4, 4) whose batch the file leaves open.
::onnx::ModelProto flattenThenGemm() {
  ::onnx::ModelProto m = model();
  ::onnx::GraphProto &g = *m.mutable_graph();
  g.set_name("flatten_gemm");
  declare(g.add_input(), "x", {-1, 3, 4, 4});
  declare(g.add_output(), "y", {-1, 5});
  *g.add_initializer() = floats("W", {48, 5}, values(240, 0.5f));
  *g.add_initializer() = floats("B", {5}, values(5, 1.0f));
  *g.add_initializer() = ints("zero", {0});
  *g.add_initializer() = ints("minus_one", {-1});
  node(g, "Shape", {"x"}, {"shape"});
  intAttr(node(g, "Gather", {"shape", "zero"}, {"batch"}), "axis", 0);
  intAttr(node(g, "Concat", {"batch", "minus_one"}, {"flat_shape"}), "axis", 0);
  node(g, "Reshape", {"x", "flat_shape"}, {"flat"});
  node(g, "Gemm", {"flat", "W", "B"}, {"y"});
  return m;
}

Tensor expectedGemm(const Tensor &x) {
  Tensor w = np::array(values(240, 0.5f), Shape{48, 5});
  Tensor b = np::array(values(5, 1.0f), Shape{5});
  return np::add(np::matmul(np::reshape(x, {x.shape()[0], 48}), w), b);
}

void expectNear(const Tensor &got, const Tensor &want, double tolerance = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  std::vector<float> a = got.to_vector<float>(), b = want.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], tolerance * (1 + std::abs(b[i]))) << "element " << i;
}

std::string messageOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(OnnxImport, ShapeComputationsFollowTheBatchEagerAndHybridized) {
  fs::path dir = scratch("shapes");
  auto block = dlc::onnx::import(save(flattenThenGemm(), dir / "m.onnx"));
  // The weights are parameters; the shape arithmetic's constants are not.
  EXPECT_EQ(block->collect_params().keys(), (std::vector<std::string>{"W", "B"}));
  for (bool hybridized : {false, true}) {
    block->hybridize(hybridized);
    for (int64_t batch : {2, 3}) {
      Tensor x = np::random::normal(0, 1, {batch, 3, 4, 4});
      expectNear((*block)(x), expectedGemm(x));
    }
  }
  EXPECT_EQ(block->compile_stats().compiles, 2); // one program per batch size
}

TEST(OnnxImport, ParametersTrainAndPredictionsFollowThem) {
  fs::path dir = scratch("train");
  auto block = dlc::onnx::import(save(flattenThenGemm(), dir / "m.onnx"));
  block->hybridize();
  Tensor x = np::random::normal(0, 1, {4, 3, 4, 4});
  gluon::ParameterPtr w = block->collect_params()["W"];
  EXPECT_EQ(w->grad_req(), GradReq::write);
  Tensor before = w->data().copyto(npx::cpu(0));
  Tensor y;
  {
    autograd::Record record;
    y = (*block)(x);
    np::sum(np::multiply(y, y)).backward();
  }
  // d sum(y²) / dW = flat(x)ᵀ · 2y
  Tensor flat = np::reshape(x, {4, 48});
  expectNear(w->grad(npx::cpu(0)), np::matmul(flat, y * 2.0, true, false), 1e-4);
  gluon::Trainer trainer(block->collect_params(), "sgd", {{"learning_rate", 0.01}});
  trainer.step(4);
  Tensor after = w->data();
  expectNear(after, np::subtract(before, w->grad(npx::cpu(0)) * (0.01 / 4)));
  // The next prediction reads the trained weights.
  Tensor expected = np::add(np::matmul(flat, after), block->collect_params()["B"]->data());
  expectNear((*block)(x), expected);
}

TEST(OnnxImport, CompiledModelFileGivesTheEagerOutputs) {
  fs::path dir = scratch("compiled");
  dlc::onnx::ImportOptions options;
  options.input_shapes["x"] = {2, 3, 4, 4};
  auto block = dlc::onnx::import(save(flattenThenGemm(), dir / "m.onnx"), options);
  dlc::onnx::export_traced(*block, (dir / "traced").string());
  CompiledExportedModel compiled = compile_exported_model(
      (dir / "traced.mlir").string(), (dir / "traced.safetensors").string(), DeviceKind::cpu);
  write_model_file((dir / "m.dlc").string(), compiled.file);
  auto loaded = CompiledModel::load((dir / "m.dlc").string());
  Tensor x = np::random::normal(0, 1, {2, 3, 4, 4});
  expectNear(loaded->run({x})[0], expectedGemm(x));
}

/// d sum(block(x) * r) / dx by autograd against central differences at `elements`.
void expectGradientOfDifferences(dlc::onnx::OnnxBlock &block, const Tensor &x,
                                 const std::vector<size_t> &elements) {
  Tensor r = np::random::normal(0, 1, block(x).shape());
  Tensor xg = x.copyto(npx::cpu(0));
  xg.attach_grad();
  {
    autograd::Record record;
    np::sum(np::multiply(block(xg), r)).backward();
  }
  std::vector<float> xs = x.to_vector<float>(), gs = xg.grad().to_vector<float>();
  for (size_t i : elements) {
    auto objective = [&](float delta) {
      std::vector<float> moved = xs;
      moved[i] += delta;
      return np::sum(np::multiply(block(np::array(moved, x.shape())), r)).to_vector<float>()[0];
    };
    float numeric = (objective(1e-2f) - objective(-1e-2f)) / 2e-2f;
    EXPECT_NEAR(gs[i], numeric, 2e-3 * (1 + std::abs(numeric))) << "element " << i;
  }
}

// Resize at a scale that gives no whole size (cubic, 0.8 and 1.5) runs as one product per
// axis with matrices the block holds as frozen parameters: eager, hybridized and a model
// file agree, and its input gradient is the finite differences'.
TEST(OnnxImport, AResizeByAnyScaleRunsEverywhereAndDifferentiates) {
  ::onnx::ModelProto m = model(13);
  ::onnx::GraphProto &g = *m.mutable_graph();
  declare(g.add_input(), "x", {2, 3, 5, 6});
  declare(g.add_output(), "y", {2, 3, 4, 9});
  *g.add_initializer() = floats("scales", {4}, {1, 1, 0.8f, 1.5f});
  ::onnx::NodeProto *n = node(g, "Resize", {"x", "", "scales"}, {"y"});
  auto *mode = n->add_attribute();
  mode->set_name("mode");
  mode->set_type(::onnx::AttributeProto::STRING);
  mode->set_s("cubic");
  fs::path dir = scratch("resize");
  std::string path = save(m, dir / "resize.onnx");
  auto block = dlc::onnx::import(path);
  Tensor x = np::random::normal(0, 1, {2, 3, 5, 6});
  Tensor eager = (*block)(x);
  ASSERT_EQ(eager.shape(), (Shape{2, 3, 4, 9}));
  gluon::ParameterDict params = block->collect_params();
  ASSERT_EQ(params.size(), 2u); // one matrix per resized axis
  for (const gluon::ParameterPtr &p : params.values())
    EXPECT_EQ(p->grad_req(), GradReq::null) << p->name();

  auto traced = dlc::onnx::import(path);
  traced->hybridize();
  expectNear((*traced)(x), eager);
  dlc::onnx::export_traced(*traced, (dir / "traced").string());
  CompiledExportedModel compiled = compile_exported_model(
      (dir / "traced.mlir").string(), (dir / "traced.safetensors").string(), DeviceKind::cpu);
  write_model_file((dir / "resize.dlc").string(), compiled.file);
  expectNear(CompiledModel::load((dir / "resize.dlc").string())->run({x})[0], eager);

  expectGradientOfDifferences(*block, x, {0, 7, 61, 179});
}

/// A dilated 2-D pool by its definition, one output at a time: x is (N, C, H, W),
/// windows k with strides s, dilations d, padding (top, left) and (bottom, right).
std::vector<float> poolReference(const std::vector<float> &x, const Shape &shape, bool max,
                                 std::array<int64_t, 2> k, std::array<int64_t, 2> s,
                                 std::array<int64_t, 2> d, std::array<int64_t, 2> begin,
                                 std::array<int64_t, 2> end, bool ceil, Shape &outShape) {
  int64_t n = shape[0] * shape[1], h = shape[2], w = shape[3];
  std::array<int64_t, 2> in{h, w}, out{};
  for (size_t a = 0; a < 2; ++a) {
    int64_t span = in[a] + begin[a] + end[a] - ((k[a] - 1) * d[a] + 1);
    out[a] = (ceil ? (span + s[a] - 1) / s[a] : span / s[a]) + 1;
    if (ceil && (out[a] - 1) * s[a] >= in[a] + begin[a])
      --out[a];
  }
  outShape = {shape[0], shape[1], out[0], out[1]};
  std::vector<float> y;
  for (int64_t p = 0; p < n; ++p)
    for (int64_t oy = 0; oy < out[0]; ++oy)
      for (int64_t ox = 0; ox < out[1]; ++ox) {
        float best = -std::numeric_limits<float>::infinity(), sum = 0;
        int64_t count = 0;
        for (int64_t i = 0; i < k[0]; ++i)
          for (int64_t j = 0; j < k[1]; ++j) {
            int64_t yy = oy * s[0] + i * d[0] - begin[0], xx = ox * s[1] + j * d[1] - begin[1];
            if (yy < 0 || yy >= h || xx < 0 || xx >= w)
              continue;
            float v = x[size_t((p * h + yy) * w + xx)];
            best = std::max(best, v);
            sum += v;
            ++count;
          }
        y.push_back(max ? best : sum / float(count));
      }
  return y;
}

// Dilated pools (asymmetric padding, ceil mode) run as the maximum or mean of their taps:
// the outputs are the definition's, eagerly and hybridized, and the input gradient of the
// average is the finite differences'.
TEST(OnnxImport, DilatedPoolsGiveTheirDefinition) {
  for (bool max : {true, false}) {
    ::onnx::ModelProto m = model(19);
    ::onnx::GraphProto &g = *m.mutable_graph();
    declare(g.add_input(), "x", {2, 3, 9, 8});
    declare(g.add_output(), "y", {});
    g.mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
    ::onnx::NodeProto *n = node(g, max ? "MaxPool" : "AveragePool", {"x"}, {"y"});
    auto ints = [&](const char *name, std::vector<int64_t> v) {
      auto *a = n->add_attribute();
      a->set_name(name);
      a->set_type(::onnx::AttributeProto::INTS);
      for (int64_t e : v)
        a->add_ints(e);
    };
    ints("kernel_shape", {3, 2});
    ints("strides", {2, 1});
    ints("dilations", {2, 3});
    ints("pads", {1, 0, 2, 1});
    intAttr(n, "ceil_mode", 1);
    fs::path dir = scratch(max ? "maxpool" : "avgpool");
    std::string path = save(m, dir / "pool.onnx");
    Tensor x = np::random::normal(0, 1, {2, 3, 9, 8});
    Shape outShape;
    std::vector<float> want = poolReference(x.to_vector<float>(), x.shape(), max, {3, 2}, {2, 1},
                                            {2, 3}, {1, 0}, {2, 1}, true, outShape);
    auto block = dlc::onnx::import(path);
    Tensor eager = (*block)(x);
    expectNear(eager, np::array(want, outShape));
    auto traced = dlc::onnx::import(path);
    traced->hybridize();
    expectNear((*traced)(x), eager);
    if (!max)
      expectGradientOfDifferences(*block, x, {0, 13, 200, 431});
  }
}

TEST(OnnxImport, AnInputShapeMustFitTheDeclaredOne) {
  fs::path dir = scratch("shape-errors");
  std::string path = save(flattenThenGemm(), dir / "m.onnx");
  dlc::onnx::ImportOptions options;
  options.input_shapes["x"] = {2, 5, 4, 4};
  EXPECT_NE(messageOf([&] { dlc::onnx::import(path, options); })
                .find("--input-shape x=2x5x4x4 contradicts input 'x' float32 batchx3x4x4"),
            std::string::npos);
  options.input_shapes = {{"image", {1, 3, 4, 4}}};
  EXPECT_NE(messageOf([&] { dlc::onnx::import(path, options); })
                .find("'image' is given a shape or value but is not an input of the model "
                      "(its inputs: 'x' float32 batchx3x4x4)"),
            std::string::npos);
  auto block = dlc::onnx::import(path);
  EXPECT_NE(messageOf([&] { (*block)(np::zeros({2, 3, 4, 5})); })
                .find("input 0 is float32 2x3x4x5, the model declares 'x' float32 batchx3x4x4"),
            std::string::npos);
  EXPECT_NE(messageOf([&] { block->example_inputs(npx::cpu(0)); })
                .find("leaves its shape open; give it (--input-shape x=1x3x224x224"),
            std::string::npos);
  std::map<std::string, Shape> parsed;
  dlc::onnx::parse_input_shape("input=1x3x224x224", parsed);
  EXPECT_EQ(parsed["input"], (Shape{1, 3, 224, 224}));
  EXPECT_NE(messageOf([&] { dlc::onnx::parse_input_shape("input=1xthree", parsed); })
                .find("'three' is not a dimension"),
            std::string::npos);
}

TEST(OnnxImport, EveryUnsupportedNodeIsNamedWithItsOpAndOpset) {
  ::onnx::ModelProto m = model(17);
  ::onnx::GraphProto &g = *m.mutable_graph();
  declare(g.add_input(), "x", {1, 4});
  declare(g.add_output(), "z", {1, 4});
  node(g, "Relu", {"x"}, {"a"});
  node(g, "Einsum", {"a"}, {"b"}, "mix");
  intAttr(node(g, "Relu", {"b"}, {"c"}, "relu2"), "bogus", 1);
  node(g, "FusedGemm", {"c"}, {"z"}, "vendor")->set_domain("com.microsoft");
  fs::path dir = scratch("unsupported");
  std::string text = messageOf([&] { dlc::onnx::import(save(m, dir / "m.onnx")); });
  EXPECT_NE(text.find("3 problems stop the import"), std::string::npos) << text;
  EXPECT_NE(text.find("node 'mix' (Einsum), opset 17: no conversion for Einsum"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("node 'relu2' (Relu), opset 17: attribute 'bogus'"), std::string::npos)
      << text;
  EXPECT_NE(text.find("node 'vendor' (com.microsoft.FusedGemm), opset 17: domain "
                      "'com.microsoft'"),
            std::string::npos)
      << text;

  m.mutable_opset_import(0)->set_version(22);
  text = messageOf([&] { dlc::onnx::import(save(m, dir / "new.onnx")); });
  EXPECT_NE(text.find("opset 22 of ONNX's domain; dlc imports opsets 11 to 21"),
            std::string::npos)
      << text;
}

// A value two nodes write is no ONNX graph (values are written once): refused naming the
// second writer, not run with one of the two.
TEST(OnnxImport, AValueWrittenTwiceIsRefused) {
  ::onnx::ModelProto m = model(17);
  ::onnx::GraphProto &g = *m.mutable_graph();
  declare(g.add_input(), "x", {1, 4});
  declare(g.add_output(), "y", {1, 4});
  node(g, "Relu", {"x"}, {"y"}, "first");
  node(g, "Sigmoid", {"x"}, {"y"}, "second");
  fs::path dir = scratch("twice");
  std::string text = messageOf([&] { dlc::onnx::import(save(m, dir / "twice.onnx")); });
  EXPECT_NE(text.find("node 'second' (Sigmoid) writes 'y', which an input, initializer or "
                      "earlier node already gives"),
            std::string::npos)
      << text;
}

// A file older than opset 11 imports where its ops mean what they mean at 11 (ONNX's
// schema registry says which changed), and runs; a changed op is refused by name.
TEST(OnnxImport, AnOlderFileImportsWhereItsOpsHaveNotChanged) {
  ::onnx::ModelProto m = model(7);
  ::onnx::GraphProto &g = *m.mutable_graph();
  declare(g.add_input(), "x", {2, 3});
  declare(g.add_input(), "y", {3});
  declare(g.add_output(), "z", {2, 3});
  node(g, "Add", {"x", "y"}, {"sum"});
  node(g, "Relu", {"sum"}, {"z"});
  fs::path dir = scratch("older");
  auto block = dlc::onnx::import(save(m, dir / "add-relu.onnx"));
  Tensor x = np::array(std::vector<float>{-1, 2, -3, 4, -5, 6}, Shape{2, 3});
  Tensor y = np::array(std::vector<float>{0.5f, 1.5f, 4}, Shape{3});
  std::vector<Tensor> z = block->forward_multi({x, y});
  ASSERT_EQ(z.size(), 1u);
  std::vector<float> got = z[0].to_vector<float>(), want = {0.0f, 3.5f, 1.0f, 4.5f, 0.0f, 10.0f};
  EXPECT_EQ(got, want);

  // Softmax-1 coerced its input to 2-D; Softmax-11 has the same attribute with another
  // meaning, so an opset-9 Softmax must not pass for an opset-11 one.
  node(g, "Softmax", {"z"}, {"p"}, "soft");
  g.mutable_output(0)->set_name("p");
  m.mutable_opset_import(0)->set_version(9);
  std::string text = messageOf([&] { dlc::onnx::import(save(m, dir / "softmax.onnx")); });
  EXPECT_NE(text.find("node 'soft' (Softmax), opset 9: Softmax-1 differs from Softmax-11, "
                      "the oldest definition dlc imports"),
            std::string::npos)
      << text;
}

TEST(OnnxImport, AShapeComputedFromTensorValuesIsRefusedAtImport) {
  ::onnx::ModelProto m = model();
  ::onnx::GraphProto &g = *m.mutable_graph();
  declare(g.add_input(), "x", {2, 6});
  declare(g.add_input(), "target", {2}, ::onnx::TensorProto::INT64);
  declare(g.add_output(), "y", {3, 4});
  node(g, "Reshape", {"x", "target"}, {"y"}, "reshape");
  fs::path dir = scratch("dynamic-shape");
  std::string path = save(m, dir / "m.onnx");
  EXPECT_NE(messageOf([&] { dlc::onnx::import(path); })
                .find("node 'reshape' (Reshape), opset 17: input 1 ('target') is computed from "
                      "tensor values; dlc needs it known when the model is imported"),
            std::string::npos);
  // Given its value at import, the input becomes a constant and leaves the inputs.
  dlc::onnx::ImportOptions options;
  options.input_values["target"] = np::array(std::vector<int64_t>{3, 4});
  auto block = dlc::onnx::import(path, options);
  ASSERT_EQ(block->inputs().size(), 1u);
  Tensor x = np::random::normal(0, 1, {2, 6});
  expectNear((*block)(x), np::reshape(x, {3, 4}));
}

TEST(OnnxFile, DamagedFilesAreErrorsNamingTheProblem) {
  fs::path dir = scratch("damaged");
  std::string path = save(flattenThenGemm(), dir / "m.onnx");
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  {
    std::ofstream out(dir / "cut.onnx", std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size() / 2));
  }
  EXPECT_NE(messageOf([&] { dlc::onnx::read_model((dir / "cut.onnx").string()); })
                .find("not an ONNX model"),
            std::string::npos);
  EXPECT_NE(messageOf([&] { dlc::onnx::read_model((dir / "missing.onnx").string()); })
                .find("ONNX model " + (dir / "missing.onnx").string()),
            std::string::npos);
  EXPECT_NE(messageOf([&] { dlc::onnx::read_model(dir.string()); }).find("directory"),
            std::string::npos);

  ::onnx::ModelProto m = flattenThenGemm();
  m.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(12);
  EXPECT_NE(messageOf([&] { dlc::onnx::read_model(save(m, dir / "short.onnx")); })
                .find("initializer 'W': raw data has 12 bytes, float32 48x5 needs 960"),
            std::string::npos);

  m = flattenThenGemm();
  m.mutable_graph()->mutable_initializer(0)->set_data_type(::onnx::TensorProto::DOUBLE);
  EXPECT_NE(messageOf([&] { dlc::onnx::read_model(save(m, dir / "double.onnx")); })
                .find("initializer 'W': dtype DOUBLE is not one dlc has"),
            std::string::npos);

  m = flattenThenGemm();
  m.mutable_graph()->mutable_node(3)->set_input(1, "nowhere");
  EXPECT_NE(messageOf([&] { dlc::onnx::import(save(m, dir / "dangling.onnx")); })
                .find("reads 'nowhere', which no input, initializer or earlier node gives"),
            std::string::npos);
}

TEST(OnnxFile, ExternalDataIsReadFromTheModelsFolderOnly) {
  fs::path dir = scratch("external");
  std::vector<float> w = values(240, 0.5f);
  {
    std::ofstream out(dir / "weights.bin", std::ios::binary);
    out << "padding!";
    out.write(reinterpret_cast<const char *>(w.data()), std::streamsize(w.size() * 4));
  }
  auto external = [&](const std::string &location, const std::string &offset) {
    ::onnx::ModelProto m = flattenThenGemm();
    ::onnx::TensorProto *t = m.mutable_graph()->mutable_initializer(0);
    t->clear_raw_data();
    t->set_data_location(::onnx::TensorProto::EXTERNAL);
    auto *entry = t->add_external_data();
    entry->set_key("location");
    entry->set_value(location);
    entry = t->add_external_data();
    entry->set_key("offset");
    entry->set_value(offset);
    return m;
  };
  auto block = dlc::onnx::import(save(external("weights.bin", "8"), dir / "m.onnx"));
  Tensor x = np::random::normal(0, 1, {2, 3, 4, 4});
  expectNear((*block)(x), expectedGemm(x));

  EXPECT_NE(messageOf([&] { dlc::onnx::read_model(save(external("../weights.bin", "8"), dir / "up.onnx")); })
                .find("external data location '../weights.bin' leaves the model's folder"),
            std::string::npos);
  EXPECT_NE(messageOf([&] { dlc::onnx::read_model(save(external("/etc/passwd", "0"), dir / "abs.onnx")); })
                .find("must be a file name relative to the model's folder"),
            std::string::npos);
  EXPECT_NE(messageOf([&] { dlc::onnx::read_model(save(external("weights.bin", "100"), dir / "far.onnx")); })
                .find("holds 968 bytes, the tensor claims 960 at offset 100"),
            std::string::npos);
}

} // namespace

// GatherND's indices need an axis to address data with; a 0-d index tensor is an error
// naming both shapes (the ONNX fuzzer's find: the last axis was read before the check).
TEST(OnnxImport, GatherNDOfAScalarIndexIsAnError) {
  ::onnx::ModelProto m = model(17);
  ::onnx::GraphProto &g = *m.mutable_graph();
  declare(g.add_input(), "x", {2, 3});
  declare(g.add_output(), "y", {2, 3});
  ::onnx::TensorProto scalar;
  scalar.set_name("i");
  scalar.set_data_type(::onnx::TensorProto::INT64);
  scalar.add_int64_data(1);
  *g.add_initializer() = scalar;
  node(g, "GatherND", {"x", "i"}, {"y"}, "pick");
  fs::path dir = scratch("gathernd");
  std::string text = messageOf([&] {
    auto block = dlc::onnx::import(save(m, dir / "g.onnx"));
    (*block)(np::zeros({2, 3}));
  });
  EXPECT_NE(text.find("(GatherND), opset 17: indices scalar for data 2x3"), std::string::npos)
      << text;
}
