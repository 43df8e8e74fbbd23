//===- LanguageModel.h - dlc-train --task lm: a byte-level GPT on a text corpus -===//
#ifndef DLC_TOOLS_DLC_TRAIN_LANGUAGEMODEL_H
#define DLC_TOOLS_DLC_TRAIN_LANGUAGEMODEL_H

#include <dlc/gluon.h>

#include <string>
#include <vector>

namespace dlc::tools {

/// What dlc-train's flags ask of a language-model run.
struct LanguageModelJob {
  std::string data = "fortunes"; ///< Debian's fortunes, or a text file or folder of them
  std::string network = "gpt2_small";
  int epochs = 5;
  int batchSize = 32;
  int sequenceLength = 128;
  double learningRate = 1e-3;
  std::string optimizer = "adam";
  std::string outputFolder = "dlc-train-out";
  std::string resume;          ///< parameters to start from ("" none)
  int64_t limit = 0; ///< training bytes to use (0: all), and a tenth as many held out
  uint64_t seed = 1;
  bool compiledStep = true;    ///< one compiled data-parallel program per step
  bool hybridize = true;
  std::vector<Device> devices; ///< the batch is split over them
  CompileOptions compileOptions;
  int sampleLines = 3;         ///< texts sampled at the end
};

/// Trains the job's GPT-2 on the bytes of its corpus (every twentieth text held out),
/// with a progress bar; writes OUT/NETWORK.safetensors each epoch, OUT/log.csv (loss
/// and perplexity, training and held-out), OUT/perplexity.svg, and OUT/samples.txt with
/// the texts sampled at the end (also printed). Throws dlc::Error on bad settings or
/// data.
void trainLanguageModel(const LanguageModelJob &job);

} // namespace dlc::tools

#endif // DLC_TOOLS_DLC_TRAIN_LANGUAGEMODEL_H
