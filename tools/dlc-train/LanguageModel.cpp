//===- LanguageModel.cpp - dlc-train --task lm: a byte-level GPT on a text corpus -===//
//
// The bytes of the corpus are the tokens (GPT-2's vocabulary of 256 in gpt2_small), cut
// into windows of --seq-len + 1 bytes: the first --seq-len are the input, the last
// --seq-len the labels, so every position predicts the byte after it. Training is the
// compiled data-parallel step (TrainStep) over the devices, or the seed's loop with
// --compiled-step=false. Perplexity is exp of the mean loss per byte.
//
//===----------------------------------------------------------------------===//
#include "LanguageModel.h"

#include "Progress.h"
#include "TextCorpus.h"

#include <dlc/Core/AtomicFile.h>
#include <dlc/Runtime/Distributed/ProcessGroup.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>

namespace dlc::tools {

namespace {

namespace text = gluon::model_zoo::text;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The inputs and labels of the windows at `order[first, first + count)`: (count, L)
/// int64 each.
std::pair<Tensor, Tensor> batchOf(const std::vector<std::string> &windows,
                                  const std::vector<size_t> &order, size_t first, size_t count) {
  const int64_t length = int64_t(windows.front().size()) - 1;
  std::vector<int64_t> inputs, labels;
  inputs.reserve(count * size_t(length));
  labels.reserve(count * size_t(length));
  for (size_t i = first; i < first + count; ++i) {
    const std::string &w = windows[order[i]];
    for (int64_t j = 0; j < length; ++j) {
      inputs.push_back(static_cast<unsigned char>(w[size_t(j)]));
      labels.push_back(static_cast<unsigned char>(w[size_t(j) + 1]));
    }
  }
  Shape shape{int64_t(count), length};
  return {np::array(inputs).reshape(shape), np::array(labels).reshape(shape)};
}

/// The mean loss per byte of `net` over `windows`, predicting on `device`.
double heldOutLoss(gluon::HybridBlock &net, const gluon::loss::SoftmaxCrossEntropyLoss &lossFn,
                   const std::vector<std::string> &windows, size_t batch, Device device) {
  std::vector<size_t> order(windows.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  double sum = 0;
  for (size_t first = 0; first < windows.size(); first += batch) {
    size_t count = std::min(batch, windows.size() - first);
    auto [inputs, labels] = batchOf(windows, order, first, count);
    sum += np::sum(lossFn(net(inputs.to(device)), labels.to(device))).item<double>();
  }
  return sum / double(windows.size());
}

/// Text sampled from `net` after `prompt`, one byte at a time at `temperature`, until
/// the separator ends a text or `maxBytes` are drawn. The model always sees a window of
/// `length` bytes (zeros after the text so far; causal attention ignores them), so one
/// compiled signature serves every step.
std::string sample(text::GPT2Model &net, const std::string &prompt, int64_t length,
                   size_t maxBytes, double temperature, std::mt19937_64 &rng, Device device) {
  std::string out = prompt;
  const int64_t vocab = net.config().vocab_size;
  while (out.size() - prompt.size() < maxBytes) {
    size_t start = out.size() > size_t(length) ? out.size() - size_t(length) : 0;
    std::vector<int64_t> window(size_t(length), 0);
    for (size_t i = start; i < out.size(); ++i)
      window[i - start] = static_cast<unsigned char>(out[i]);
    Tensor logits = net(np::array(window).reshape({1, length}).to(device));
    int64_t position = int64_t(out.size() - start) - 1;
    std::vector<float> row =
        npx::slice_axis(logits, 1, position, position + 1).to_vector<float>();
    double top = *std::max_element(row.begin(), row.begin() + 256);
    std::vector<double> weights(256);
    for (size_t b = 0; b < 256 && int64_t(b) < vocab; ++b)
      weights[b] = std::exp((row[b] - top) / temperature);
    out.push_back(char(std::discrete_distribution<int>(weights.begin(), weights.end())(rng)));
    if (out.size() >= prompt.size() + 3 && out.compare(out.size() - 3, 3, "\n%\n") == 0)
      break;
  }
  return out.substr(prompt.size());
}

struct EpochRow {
  int epoch;
  double trainLoss, heldOutLoss, seconds;
};

void writeLog(const std::string &folder, const std::vector<EpochRow> &rows) {
  write_file_atomically(folder + "/log.csv", [&](std::ostream &csv) {
    csv << "epoch,train_loss,train_perplexity,heldout_loss,heldout_perplexity,seconds\n";
    for (const EpochRow &r : rows)
      csv << r.epoch << ',' << r.trainLoss << ',' << std::exp(r.trainLoss) << ','
          << r.heldOutLoss << ',' << std::exp(r.heldOutLoss) << ',' << r.seconds << '\n';
  });
  // Perplexity per epoch, training (blue) and held-out (orange), from 1 up.
  const double w = 480, h = 300, margin = 40;
  double top = 1;
  for (const EpochRow &r : rows)
    top = std::max({top, std::exp(r.trainLoss), std::exp(r.heldOutLoss)});
  auto x = [&](size_t i) {
    return margin + (w - 2 * margin) * (rows.size() > 1 ? double(i) / double(rows.size() - 1) : 0.5);
  };
  auto y = [&](double ppl) { return h - margin - (h - 2 * margin) * (ppl - 1) / (top - 1 + 1e-9); };
  write_file_atomically(folder + "/perplexity.svg", [&](std::ostream &svg) {
    svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h << "'>\n"
        << "<rect width='100%' height='100%' fill='white'/>\n"
        << "<text x='" << margin << "' y='20' font-family='sans-serif' font-size='14'>"
        << "dlc-train --task lm: perplexity per epoch (blue train, orange held-out)</text>\n"
        << "<line x1='" << margin << "' y1='" << y(1) << "' x2='" << w - margin << "' y2='"
        << y(1) << "' stroke='black'/>\n";
    for (double tick : {1.0, top})
      svg << "<text x='4' y='" << y(tick) + 4 << "' font-size='10'>" << tick << "</text>\n";
    for (int pick : {0, 1}) {
      svg << "<polyline fill='none' stroke='" << (pick ? "#ff7f0e" : "#1f77b4")
          << "' stroke-width='2' points='";
      for (size_t i = 0; i < rows.size(); ++i)
        svg << x(i) << ',' << y(std::exp(pick ? rows[i].heldOutLoss : rows[i].trainLoss)) << ' ';
      svg << "'/>\n";
    }
    svg << "</svg>\n";
  });
}

} // namespace

void trainLanguageModel(const LanguageModelJob &job) {
  if (dist::size() > 1)
    throw UnsupportedError("--task lm runs in one process (its --devices share each batch); "
                           "run it without mpirun");
  if (job.sequenceLength < 2)
    throw ValueError("--seq-len " + std::to_string(job.sequenceLength) + ": at least 2 bytes");
  const std::vector<std::string> &names = text::model_names();
  auto gpt = std::find(names.begin(), names.end(), job.network) == names.end()
                 ? nullptr
                 : std::dynamic_pointer_cast<text::GPT2Model>(text::get_model(job.network));
  if (!gpt)
    throw ValueError("--task lm --network " + job.network +
                     ": a language model is a GPT-2 of the text zoo (gpt2_small, gpt2_124m)");
  if (gpt->config().vocab_size < 256)
    throw ValueError("--network " + job.network + ": its vocabulary of " +
                     std::to_string(gpt->config().vocab_size) + " cannot hold every byte");
  if (job.sequenceLength > gpt->config().max_length)
    throw ValueError("--seq-len " + std::to_string(job.sequenceLength) + ": " + job.network +
                     " has " + std::to_string(gpt->config().max_length) + " positions");
  TextCorpus corpus = readCorpus(job.data);
  const size_t length = size_t(job.sequenceLength), batch = size_t(job.batchSize);
  std::string trainBytes = corpus.train, heldBytes = corpus.heldOut;
  if (job.limit > 0) { // a short run: its held-out text is a tenth of its training text
    trainBytes.resize(std::min(trainBytes.size(), size_t(job.limit)));
    heldBytes.resize(std::min(heldBytes.size(), std::max(size_t(job.limit) / 10, length + 1)));
  }
  std::vector<std::string> trainWindows = windows(trainBytes, length),
                           heldWindows = windows(heldBytes, length);
  if (trainWindows.size() < batch)
    throw ValueError("--batch-size " + std::to_string(batch) + " is larger than the " +
                     std::to_string(trainWindows.size()) + " training sequences of " +
                     std::to_string(length) + " bytes");
  if (heldWindows.empty())
    throw ValueError("--data " + job.data + ": the held-out texts are shorter than --seq-len " +
                     std::to_string(length));
  const std::vector<Device> &devices = job.devices;
  std::filesystem::create_directories(job.outputFolder);
  std::printf("dlc-train: %s, a byte-level language model, on %s (%zu texts in %zu files): "
              "%zu training and %zu held-out sequences of %zu bytes, batch %d on",
              gpt->kind().c_str(), job.data.c_str(), corpus.texts, corpus.files,
              trainWindows.size(), heldWindows.size(), length, job.batchSize);
  for (Device d : devices)
    std::printf(" %s", d.str().c_str());
  std::printf(", %s lr %g, %d epochs\n", job.optimizer.c_str(), job.learningRate, job.epochs);

  gpt->initialize(init::Normal(0.02), devices, /*force_reinit=*/true);
  if (!job.resume.empty()) {
    gpt->load_parameters(job.resume, devices);
    std::printf("dlc-train: started from %s (the optimizer starts afresh)\n", job.resume.c_str());
  }
  if (job.hybridize)
    gpt->hybridize(true, job.compileOptions);
  gluon::Trainer trainer(gpt->collect_params(), job.optimizer,
                         {{"learning_rate", job.learningRate}});
  gluon::loss::SoftmaxCrossEntropyLoss lossFn;
  const bool compiledStep = job.compiledStep && job.hybridize;
  gluon::TrainStep step(*gpt, lossFn, trainer, devices, false, job.compileOptions);
  std::printf("dlc-train: %s\n", compiledStep ? "compiled data-parallel training step"
                                 : job.hybridize ? "seed loop, hybridized network"
                                                 : "seed loop, eager network");
  std::fflush(stdout);

  const std::string checkpoint = job.outputFolder + "/" + job.network + ".safetensors";
  std::vector<EpochRow> rows;
  std::vector<size_t> order(trainWindows.size());
  for (int epoch = 1; epoch <= job.epochs; ++epoch) {
    auto tic = std::chrono::steady_clock::now();
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::mt19937_64 shuffle(job.seed * 1000003 + uint64_t(epoch));
    std::shuffle(order.begin(), order.end(), shuffle);
    const size_t steps = order.size() / batch, total = steps * batch * length;
    double lossSum = 0;
    size_t sequences = 0;
    for (size_t s = 0; s < steps; ++s) {
      auto [inputs, labels] = batchOf(trainWindows, order, s * batch, batch);
      std::vector<Tensor> losses;
      if (compiledStep) {
        losses = {step(inputs, labels)};
      } else {
        std::vector<Tensor> xs = gluon::utils::split_and_load(inputs, devices);
        std::vector<Tensor> ys = gluon::utils::split_and_load(labels, devices);
        {
          autograd::Record record;
          for (size_t d = 0; d < xs.size(); ++d)
            losses.push_back(lossFn((*gpt)(xs[d]), ys[d]));
        }
        for (Tensor &l : losses)
          l.backward();
        trainer.step(int64_t(batch));
      }
      for (const Tensor &l : losses)
        lossSum += np::sum(l).item<double>();
      sequences += batch;
      size_t done = sequences * length;
      double rate = double(done) / secondsSince(tic), mean = lossSum / double(sequences);
      char rateText[48], metrics[64];
      std::snprintf(rateText, sizeof rateText, "%.0f bytes/s", rate);
      std::snprintf(metrics, sizeof metrics, "loss %.4f  perplexity %.2f", mean, std::exp(mean));
      showProgress(epoch, done, total, rateText, metrics, double(total - done) / rate);
    }
    const double trainSeconds = secondsSince(tic), trainLoss = lossSum / double(sequences);
    if (!std::isfinite(trainLoss))
      throw Error("epoch " + std::to_string(epoch) + ": the training loss is " +
                  std::to_string(trainLoss) + " (training diverged; try a lower --lr); " +
                  "nothing was saved over " + checkpoint);
    const double heldLoss = heldOutLoss(*gpt, lossFn, heldWindows, batch, devices.front());
    gpt->save_parameters(checkpoint, {{"epoch", std::to_string(epoch)}});
    rows.push_back({epoch, trainLoss, heldLoss, secondsSince(tic)});
    writeLog(job.outputFolder, rows);
    std::printf("[Epoch %d] training: loss=%.4f perplexity=%.2f; held-out: loss=%.4f "
                "perplexity=%.2f; %.1f s (%.0f bytes/s)\n",
                epoch, trainLoss, std::exp(trainLoss), heldLoss, std::exp(heldLoss), trainSeconds,
                double(sequences * length) / trainSeconds);
    std::fflush(stdout);
  }

  std::mt19937_64 rng(job.seed);
  std::string samples;
  for (int i = 0; i < job.sampleLines; ++i)
    samples += sample(*gpt, "%\n", int64_t(length), 400, 0.8, rng, devices.front());
  write_file_atomically(job.outputFolder + "/samples.txt",
                        [&](std::ostream &file) { file << samples; });
  std::printf("dlc-train: %d texts sampled at temperature 0.8 (also in %s/samples.txt):\n%s",
              job.sampleLines, job.outputFolder.c_str(), samples.c_str());
  if (!samples.empty() && samples.back() != '\n')
    std::printf("\n");
  std::printf("dlc-train: held-out perplexity %.2f; %s.safetensors, log.csv and "
              "perplexity.svg in %s/\n",
              rows.empty() ? 0.0 : std::exp(rows.back().heldOutLoss), job.network.c_str(),
              job.outputFolder.c_str());
}

} // namespace dlc::tools
