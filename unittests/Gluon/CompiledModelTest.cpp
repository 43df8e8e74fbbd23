//===- CompiledModelTest.cpp - model files: round trip, damage, hostile content -===//
#include "../Frontend/GradientCheck.h"
#include "../../examples/LeafNetwork.h"
#include "ElementwiseBlocks.h"

#include "dlc/Hybridize/ModelCompiler.h"
#include "dlc/Runtime/Files/ProgramFile.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

using namespace dlc;
using namespace dlc::gluon;
using dlc::testing::expectClose;
using dlc::testing::randomTensor;

namespace {

std::string temporaryPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("dlc-model-test-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

/// A LeafNetwork trained for two steps on 32x32 images, hybridized, called once to
/// predict: its output, its model file at `path` and its export at `path`.mlir and
/// `path`.safetensors.
Tensor trainedModel(const std::string &path, const Tensor &images) {
  np::random::seed(5);
  leafnet::LeafNetwork net;
  net.initialize(init::Xavier(), {cpu()});
  {
    autograd::Pause shapes;
    net(np::zeros({1, 3, 32, 32}));
  }
  net.hybridize();
  Trainer trainer(net.collect_params(), "sgd", {{"learning_rate", 0.1}});
  loss::SoftmaxCrossEntropyLoss lossFn;
  Tensor labels = np::array(std::vector<int64_t>{0, 1, 1, 0});
  for (int step = 0; step < 2; ++step) {
    autograd::Record record;
    Tensor loss = lossFn(net(images), labels);
    loss.backward();
    trainer.step(4);
  }
  Tensor predicted = net(images); // predicting: the program the file holds
  net.save_compiled(path);
  net.export_model(path);
  return predicted;
}

/// Expects loading `path` to throw dlc::Error naming the file; returns the message.
std::string loadError(const std::string &path) {
  try {
    CompiledModel::load(path);
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    return message;
  } catch (const std::exception &e) {
    ADD_FAILURE() << "not a dlc::Error: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << path << " loaded";
  return "";
}

class CompiledModelFile : public ::testing::Test {
protected:
  void SetUp() override {
    path = temporaryPath("leafnet.dlc");
    images = randomTensor({4, 3, 32, 32}, 21);
    expected = trainedModel(path, images);
    bytes = readBytes(path);
    ASSERT_GT(bytes.size(), 1000u);
  }
  void TearDown() override {
    for (const char *suffix : {"", ".damaged", ".mlir", ".safetensors", ".compiled", ".input",
                               ".output"})
      std::remove((path + suffix).c_str());
  }
  std::string damaged() const { return path + ".damaged"; }

  std::string path, bytes;
  Tensor images, expected;
};

TEST_F(CompiledModelFile, RoundTripGivesTheHybridizedOutputs) {
  auto model = CompiledModel::load(path);
  ASSERT_EQ(model->inputs().size(), 1u);
  EXPECT_EQ(model->inputs()[0].name, "data");
  EXPECT_EQ(model->inputs()[0].shape, (Shape{4, 3, 32, 32}));
  ASSERT_EQ(model->outputs().size(), 1u);
  EXPECT_EQ(model->outputs()[0].shape, (Shape{4, 2}));
  EXPECT_EQ(model->target(), "cpu");
  std::vector<Tensor> out = model->run({images});
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0].to_vector<float>(), expected.to_vector<float>(), 1e-5, "model output");
  // A different batch gives different outputs (the model computes, it does not replay).
  Tensor other = randomTensor({4, 3, 32, 32}, 22);
  EXPECT_NE(model->run({other})[0].to_vector<float>(), expected.to_vector<float>());
}

// dlc-compile's path: the exported module and parameters, compiled again outside the
// training program, give the same model.
TEST_F(CompiledModelFile, AnExportCompiledAgainGivesTheHybridizedOutputs) {
  CompiledExportedModel compiled =
      compile_exported_model(path + ".mlir", path + ".safetensors", DeviceKind::cpu);
  EXPECT_NE(compiled.optimized_ir.find("func.func @forward"), std::string::npos);
  write_model_file(path + ".compiled", compiled.file);
  auto model = CompiledModel::load(path + ".compiled");
  EXPECT_EQ(model->inputs()[0].name, "data");
  EXPECT_EQ(model->inputs()[0].shape, (Shape{4, 3, 32, 32}));
  expectClose(model->run({images})[0].to_vector<float>(), expected.to_vector<float>(), 1e-5,
              "compiled export");
}

// The same through the tools a user runs: dlc-compile, then dlc-run on a safetensors
// batch, its outputs read back.
TEST_F(CompiledModelFile, DlcCompileThenDlcRunGiveTheHybridizedOutputs) {
  safetensors::save(path + ".input", {{"data", images}});
  std::string tools = DLC_TOOLS_DIR;
  std::string compile = tools + "/dlc-compile " + path + ".mlir " + path + ".safetensors -o " +
                        path + ".compiled > /dev/null";
  ASSERT_EQ(std::system(compile.c_str()), 0) << compile;
  std::string run = tools + "/dlc-run " + path + ".compiled --input data=" + path +
                    ".input --output " + path + ".output > /dev/null";
  ASSERT_EQ(std::system(run.c_str()), 0) << run;
  auto outputs = safetensors::load(path + ".output");
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].first, "output");
  expectClose(outputs[0].second.to_vector<float>(), expected.to_vector<float>(), 1e-5,
              "dlc-run output");
}

TEST_F(CompiledModelFile, ExportsThatAreNotAModelAreRefusedByName) {
  auto compileError = [&](const std::string &module, const std::string &weights,
                          const std::string &function = "forward") {
    try {
      compile_exported_model(module, weights, DeviceKind::cpu, function);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("compiled");
  };
  // Another network's export (a dense layer), and one traced only while training.
  std::string dense = path + ".damaged", training = path + ".training";
  {
    auto net = std::make_shared<HybridSequential>();
    net->add(std::make_shared<nn::Dense>(3));
    net->initialize(init::Xavier(), {cpu()});
    net->hybridize();
    (*net)(randomTensor({2, 5}, 1));
    net->export_model(dense);
    auto trained = std::make_shared<HybridSequential>();
    trained->add(std::make_shared<nn::Dense>(3), std::make_shared<nn::BatchNorm>());
    trained->initialize(init::Xavier(), {cpu()});
    trained->hybridize();
    autograd::Record record;
    (*trained)(randomTensor({2, 5}, 1)).backward();
    trained->export_model(training);
  }
  // Parameters of another network: the first argument not in the file is named.
  std::string mixed = compileError(path + ".mlir", dense + ".safetensors");
  EXPECT_NE(mixed.find("is not in " + dense + ".safetensors"), std::string::npos) << mixed;
  mixed = compileError(dense + ".mlir", path + ".safetensors");
  EXPECT_NE(mixed.find("is not in " + path + ".safetensors"), std::string::npos) << mixed;
  std::string function = compileError(path + ".mlir", path + ".safetensors", "predict");
  EXPECT_NE(function.find("has no function @predict"), std::string::npos) << function;
  std::string train = compileError(training + ".mlir", training + ".safetensors");
  EXPECT_NE(train.find("traced while training"), std::string::npos) << train;
  // A module that does not parse, named with the parser's message.
  writeBytes(dense + ".mlir", "func.func @forward(");
  std::string parse = compileError(dense + ".mlir", path + ".safetensors");
  EXPECT_NE(parse.find(dense + ".mlir does not parse"), std::string::npos) << parse;
  for (const std::string &prefix : {dense, training})
    for (const char *suffix : {".mlir", ".safetensors"})
      std::remove((prefix + suffix).c_str());
}

TEST_F(CompiledModelFile, RunsFromSeveralThreadsAtOnce) {
  auto model = CompiledModel::load(path);
  std::vector<float> want = expected.to_vector<float>();
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        std::vector<float> got = model->run({images})[0].to_vector<float>();
        for (size_t k = 0; k < got.size(); ++k)
          mismatches[size_t(t)] += std::abs(got[k] - want[k]) > 1e-5f * (1 + std::abs(want[k]));
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(mismatches[size_t(t)], 0) << "thread " << t;
}

TEST_F(CompiledModelFile, RunsOnAnotherDeviceOfItsKind) {
  auto moved = CompiledModel::load(path, cpu(1));
  EXPECT_EQ(moved->device(), cpu(1));
  std::vector<Tensor> out = moved->run({images});
  EXPECT_EQ(out[0].device(), cpu(1));
  expectClose(out[0].to_vector<float>(), expected.to_vector<float>(), 1e-5, "on cpu(1)");
  if (num_gpus() == 0) {
    try {
      CompiledModel::load(path, gpu(0));
      ADD_FAILURE() << "a CPU model loaded for gpu(0)";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("cannot run on gpu(0)"), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(CompiledModelFile, WrongInputsAreRefusedByName) {
  auto model = CompiledModel::load(path);
  EXPECT_THROW(model->run({}), ValueError);
  try {
    model->run({randomTensor({2, 3, 32, 32}, 1)});
    ADD_FAILURE() << "a batch of 2 ran";
  } catch (const ShapeError &e) {
    EXPECT_NE(std::string(e.what()).find("input 'data' must be float32 4x3x32x32, got 2x3x32x32"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(model->run({images.astype(DType::f16)}), DTypeError);
}

TEST_F(CompiledModelFile, TruncatedFilesAreRefused) {
  // Every length up to the header and section table, then a spread of lengths.
  std::vector<size_t> lengths;
  for (size_t n = 0; n < 128; ++n)
    lengths.push_back(n);
  for (size_t n = 128; n < bytes.size(); n += bytes.size() / 97 + 1)
    lengths.push_back(n);
  lengths.push_back(bytes.size() - 1);
  for (size_t n : lengths) {
    writeBytes(damaged(), bytes.substr(0, n));
    std::string message = loadError(damaged());
    EXPECT_FALSE(message.empty()) << "length " << n;
  }
}

TEST_F(CompiledModelFile, FlippedBytesAreRefused) {
  // Every byte of the header and table, and bytes spread over the sections: the magic,
  // the version and the table are checked, the sections' checksums catch the rest.
  std::vector<size_t> positions;
  for (size_t n = 0; n < 112; ++n)
    positions.push_back(n);
  for (size_t n = 112; n < bytes.size(); n += bytes.size() / 61 + 1)
    positions.push_back(n);
  for (size_t n : positions) {
    std::string copy = bytes;
    copy[n] = char(copy[n] ^ 0x5a);
    writeBytes(damaged(), copy);
    try {
      auto model = CompiledModel::load(damaged());
      // A flip in padding or in an unused table word may leave the model intact: then
      // it must still compute what the original does.
      expectClose(model->run({images})[0].to_vector<float>(), expected.to_vector<float>(),
                  1e-5, "byte " + std::to_string(n));
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(damaged()), std::string::npos) << e.what();
    }
  }
}

TEST_F(CompiledModelFile, HostileContentWithValidChecksumsIsRefused) {
  ModelFile good = read_model_file(path);
  std::string error;
  std::shared_ptr<Program> program = decode_program(good.program, error);
  ASSERT_TRUE(program) << error;

  auto expectRefused = [&](ModelFile file, const std::string &want, const std::string &what) {
    write_model_file(damaged(), file);
    std::string message = loadError(damaged());
    EXPECT_NE(message.find(want), std::string::npos) << what << ": " << message;
  };
  auto withProgram = [&](auto change) {
    auto copy = std::make_shared<Program>();
    std::string ignored;
    copy = decode_program(good.program, ignored);
    change(*copy);
    ModelFile file = good;
    file.program = encode_program(*copy);
    return file;
  };
  // Random bytes as the program, a program cut short, a program with bytes after it.
  {
    ModelFile file = good;
    for (char &c : file.program)
      c = char((&c - file.program.data()) * 131 + 7);
    expectRefused(file, "its program", "noise");
    file = good;
    file.program.resize(file.program.size() / 2);
    expectRefused(file, "its program", "half a program");
    file = good;
    file.program += "x";
    expectRefused(file, "bytes follow the program", "a byte too many");
  }
  // A convolution missing its weight, a step reading a value that does not exist, an
  // output claimed larger than the rule gives, a value placed past its arena's end.
  size_t conv = 0;
  while (conv < program->steps.size() &&
         program->steps[conv].op.rfind("dlc.conv2d", 0) != 0)
    ++conv;
  ASSERT_LT(conv, program->steps.size()) << program->str();
  expectRefused(withProgram([&](Program &p) {
                  p.steps[conv].inputs.resize(1);
                  p.steps[conv].kept_inputs.clear();
                }),
                "dlc.conv2d takes 2 to 3 operands and 1 results, the step has 1 and 1",
                "a convolution without its weight");
  expectRefused(withProgram([&](Program &p) { p.steps[conv].kept_inputs = {3}; }),
                "keeps input 3 of its", "kept weights past the step's inputs");
  size_t second = conv + 1; // its input is the first block's output, computed every run
  while (second < program->steps.size() &&
         program->steps[second].op.rfind("dlc.conv2d", 0) != 0)
    ++second;
  ASSERT_LT(second, program->steps.size()) << program->str();
  expectRefused(withProgram([&](Program &p) { p.steps[second].kept_inputs = {0}; }),
                "keeps input 0 prepared, but it reads", "kept weights a run computes");
  expectRefused(withProgram([&](Program &p) { p.steps[conv].inputs[0] = 1 << 20; }),
                "names value %1048576", "an operand out of range");
  expectRefused(withProgram([&](Program &p) { // as many bytes, another shape
                  Shape &shape = p.values[size_t(p.steps[conv].outputs[0])].shape;
                  shape[0] *= 2;
                  shape[1] /= 2;
                }),
                "gives result 0", "a result shaped otherwise than its rule says");
  expectRefused(withProgram([&](Program &p) {
                  for (ProgramValue &v : p.values)
                    if (v.storage == StorageKind::arena && v.alias_of < 0) {
                      v.offset = p.arenas.front().bytes;
                      break;
                    }
                }),
                "does not fit", "a value past its arena");
  expectRefused(withProgram([&](Program &p) { p.steps[conv].op = "dlc.no_such_op"; }),
                "no kernel for dlc.no_such_op", "an unknown op");
  // Plans that fit every buffer but share bytes between values live at once (they ran
  // to wrong outputs), a view outside what it views, and an intermediate written into
  // an argument's buffer.
  auto arenaOwner = [](const Program &p, int id) {
    const ProgramValue &v = p.values[size_t(id)];
    return v.storage == StorageKind::arena && v.alias_of < 0;
  };
  // Whether step `i`'s output, moved onto its input, still fits that arena.
  auto fitsOnItsInput = [&](size_t i) {
    const ProgramValue &in = program->values[size_t(program->steps[i].inputs[0])];
    const ProgramValue &out = program->values[size_t(program->steps[i].outputs[0])];
    return in.index == out.index && in.offset + out.bytes() <= program->arenas[size_t(in.index)].bytes;
  };
  size_t clash = 0; // a non-element-wise step reading an arena value and writing another
  while (clash < program->steps.size() &&
         !(program->steps[clash].kind == ProgramStep::Kind::kernel &&
           program->steps[clash].op.rfind("dlc.conv2d", 0) == 0 &&
           arenaOwner(*program, program->steps[clash].inputs[0]) &&
           arenaOwner(*program, program->steps[clash].outputs[0]) && fitsOnItsInput(clash)))
    ++clash;
  ASSERT_LT(clash, program->steps.size()) << program->str();
  expectRefused(withProgram([&](Program &p) {
                  const ProgramStep &step = p.steps[clash];
                  p.values[size_t(step.outputs[0])].offset =
                      p.values[size_t(step.inputs[0])].offset;
                }),
                "in the same bytes while both are live", "a convolution over its own input");
  expectRefused(withProgram([&](Program &p) {
                  for (ProgramValue &v : p.values)
                    if (v.alias_of >= 0) {
                      v.offset += p.values[size_t(v.alias_of)].bytes();
                      break;
                    }
                }),
                "lies outside its bytes", "a view past what it views");
  expectRefused(withProgram([&](Program &p) {
                  size_t room = p.values[size_t(p.arguments[0])].bytes();
                  for (size_t id = 0; id < p.values.size(); ++id)
                    if (arenaOwner(p, int(id)) && p.values[id].bytes() <= room) {
                      p.values[id].storage = StorageKind::argument;
                      p.values[id].index = 0;
                      p.values[id].offset = 0;
                      break;
                    }
                }),
                "whose buffer holds argument 0's value only", "an argument's buffer overwritten");
  // Weights and inputs that do not match the program's arguments.
  {
    ModelFile file = good;
    file.weights.front().bytes.pop_back();
    expectRefused(file, "bytes for float32", "a weight whose size disagrees with its shape");
    file = good;
    file.weights.front().shape.push_back(1);
    expectRefused(file, "its argument is", "a weight of another shape than its argument");
    file = good;
    file.weights.pop_back();
    expectRefused(file, "is bound 0 times", "a missing weight");
    file = good;
    file.weights.push_back(file.weights.front());
    expectRefused(file, "is bound 2 times", "a weight bound twice");
    file = good;
    file.target = "tpu";
    expectRefused(file, "neither cpu nor cuda", "an unknown target");
  }
  // The untouched file still loads after all that.
  EXPECT_NO_THROW(CompiledModel::load(path));
}

// A small model of another shape (a dense layer then ReLU and a fused scale), whose
// file also seeds the model fuzzer: DLC_MODEL_FUZZ_SEEDS=dir writes it and its program
// there (fuzz/corpus/model holds them).
TEST(CompiledModel, ASmallDenseModelRoundTrips) {
  np::random::seed(9);
  auto net = std::make_shared<HybridSequential>();
  net->add(std::make_shared<nn::Dense>(3, "relu"), std::make_shared<nn::Dense>(2));
  net->initialize(init::Xavier(), {cpu()});
  net->hybridize();
  Tensor x = randomTensor({2, 5}, 3);
  Tensor want = (*net)(x);
  std::string path = temporaryPath("dense.dlc");
  net->save_compiled(path);
  auto model = CompiledModel::load(path);
  expectClose(model->run({x})[0].to_vector<float>(), want.to_vector<float>(), 1e-6, "dense");
  if (const char *seeds = std::getenv("DLC_MODEL_FUZZ_SEEDS")) {
    std::string file = readBytes(path);
    writeBytes(std::string(seeds) + "/dense.dlc", "F" + file);
    writeBytes(std::string(seeds) + "/dense.program", "P" + read_model_file(path).program);
  }
  std::remove(path.c_str());
}

// The code generated for fused element-wise regions travels in the file: linked into a
// shared object when it is written, opened from memory when it is loaded, and the
// regions run it. A version-1 file (no host code) and code that does not load both
// leave the regions on their interpreted sub-kernels, with the same values.
TEST(CompiledModel, GeneratedHostCodeTravelsInTheFile) {
  dlc::testing::EveryElementwiseOp block;
  Tensor x = randomTensor({64, 129}, 41) * 2.0; // three chunks of 4096
  block.hybridize();
  Tensor want = block(x);
  ASSERT_NE(block.compiled()->programs().find("}[generated]"), std::string::npos)
      << block.compiled()->programs();
  std::string path = temporaryPath("elementwise.dlc");
  block.save_compiled(path);

  ModelFile file = read_model_file(path);
  EXPECT_EQ(file.version, kModelFileVersion);
  ASSERT_GT(file.host_code.size(), 4u);
  EXPECT_EQ(file.host_code.compare(0, 4, "\x7f" "ELF"), 0) << "a shared object";
  EXPECT_NE(file.host_target.find("x86_64"), std::string::npos) << file.host_target;
  auto model = CompiledModel::load(path);
  EXPECT_NE(model->program().str().find("}[generated]"), std::string::npos)
      << model->program().str();
  expectClose(model->run({x})[0].to_vector<float>(), want.to_vector<float>(), 1e-6,
              "stored host code");

  auto expectInterpreted = [&](const ModelFile &variant, const std::string &what) {
    std::string variantPath = temporaryPath("elementwise-variant.dlc");
    write_model_file(variantPath, variant);
    auto loaded = CompiledModel::load(variantPath);
    EXPECT_EQ(loaded->program().str().find("}[generated]"), std::string::npos)
        << what << "\n" << loaded->program().str();
    expectClose(loaded->run({x})[0].to_vector<float>(), want.to_vector<float>(), 1e-6, what);
    std::remove(variantPath.c_str());
  };
  ModelFile versionOne = file;
  versionOne.version = 1;
  versionOne.host_code.clear();
  versionOne.program = encode_program(model->program(), 1);
  expectInterpreted(versionOne, "a version-1 file");
  ModelFile notAnObject = file;
  notAnObject.host_code = "not a shared object";
  expectInterpreted(notAnObject, "host code that does not load");

  // A region naming an entry the code does not have is refused by name.
  ModelFile wrongEntry = file;
  size_t at = wrongEntry.program.find("_packed");
  ASSERT_NE(at, std::string::npos);
  wrongEntry.program[at + 1] = 'q'; // "_qacked": same length
  std::string wrongPath = temporaryPath("elementwise-wrong-entry.dlc");
  write_model_file(wrongPath, wrongEntry);
  try {
    CompiledModel::load(wrongPath);
    ADD_FAILURE() << "loaded a program whose entry is missing";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("has no entry"), std::string::npos) << e.what();
  }
  std::remove(wrongPath.c_str());
  std::remove(path.c_str());
}

// A model file (version 4) keeps what its program prepares once: the folded batch norm
// (prepared steps) and the weights its convolutions keep prepared for oneDNN, with the
// algorithm chosen at compile time. Written for an older reader, version 3 drops the
// kept weights (prepared on every call) and version 2 the prepared block too; every
// version predicts the same values (to Winograd's rounding).
TEST(CompiledModel, PreparedWorkAndKeptWeightsTravelInTheFile) {
  np::random::seed(10);
  auto net = std::make_shared<HybridSequential>();
  nn::Conv2DOptions same;
  same.padding = {1, 1};
  net->add(std::make_shared<nn::Conv2D>(16, 3, "", same), std::make_shared<nn::BatchNorm>(),
           std::make_shared<nn::Activation>("relu"),
           std::make_shared<nn::Conv2D>(16, 3, "", same));
  net->initialize(init::Xavier(), {cpu()});
  Tensor x = randomTensor({2, 16, 9, 9}, 4);
  {
    autograd::Record train; // running statistics away from 0 and 1
    (*net)(x * 2.0 + 1.0);
  }
  CompileOptions options = compile_options_from_environment();
  options.conv_algorithms = "winograd"; // auto leaves convolutions this small direct
  net->hybridize(true, options);
  Tensor want = (*net)(x);
  EXPECT_NE(net->compiled()->compiled_ir().find("algorithm winograd"), std::string::npos);
  std::string path = temporaryPath("kept.dlc");
  net->save_compiled(path);
  ModelFile file = read_model_file(path);
  EXPECT_EQ(file.version, 4u);
  auto model = CompiledModel::load(path);
  std::string listing = model->program().str();
  EXPECT_NE(listing.find(" kept"), std::string::npos) << listing;
  EXPECT_NE(listing.find("= prepared "), std::string::npos) << listing;
  for (int call = 0; call < 2; ++call) // the second call finds the weights kept
    expectClose(model->run({x})[0].to_vector<float>(), want.to_vector<float>(), 1e-6,
                "version 4, call " + std::to_string(call));
  for (uint32_t version : {3u, 2u}) {
    ModelFile older = file;
    older.version = version;
    older.program = encode_program(model->program(), version);
    std::string olderPath = temporaryPath("kept-v" + std::to_string(version) + ".dlc");
    write_model_file(olderPath, older);
    auto loaded = CompiledModel::load(olderPath);
    std::string what = "version " + std::to_string(version);
    EXPECT_EQ(loaded->program().str().find(" kept"), std::string::npos) << what;
    EXPECT_EQ(loaded->program().str().find("= prepared ") != std::string::npos, version == 3)
        << what;
    // Without kept weights the Winograd convolution runs oneDNN's kernel that transforms
    // the weights itself: the same algorithm, rounded in another order.
    expectClose(loaded->run({x})[0].to_vector<float>(), want.to_vector<float>(), 1e-5, what);
    std::remove(olderPath.c_str());
  }
  std::remove(path.c_str());
}

TEST(CompiledModel, SavingBeforeAPredictingCallSaysWhy) {
  leafnet::LeafNetwork net;
  net.initialize(init::Xavier(), {cpu()});
  net.hybridize();
  try {
    net.save_compiled(temporaryPath("never.dlc"));
    ADD_FAILURE() << "saved without a compiled program";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("no compiled program yet"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(CompiledModel::load(temporaryPath("missing.dlc")), Error);
}

} // namespace
