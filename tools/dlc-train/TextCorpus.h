//===- TextCorpus.h - the texts a language model trains on ---------------------===//
#ifndef DLC_TOOLS_DLC_TRAIN_TEXTCORPUS_H
#define DLC_TOOLS_DLC_TRAIN_TEXTCORPUS_H

#include <cstdint>
#include <string>
#include <vector>

namespace dlc::tools {

/// Where Debian's fortunes package puts its collections.
inline const char *kFortunesFolder = "/usr/share/games/fortunes";

/// A corpus as two byte streams: the training texts and the held-out ones (every
/// twentieth text), each text followed by the separator "%\n", so that a model learns
/// where a text ends.
struct TextCorpus {
  std::string train, heldOut;
  size_t texts = 0, files = 0;
};

/// The texts of `source`: "fortunes" (every collection of Debian's fortunes package), a
/// file, or a folder (its regular files, sorted). A file of fortune's format (texts
/// between lines holding "%") gives one text each; any other file is one text. Throws
/// dlc::Error naming what is missing or unreadable, or a corpus with no text.
TextCorpus readCorpus(const std::string &source);

/// Windows of `length` + 1 bytes of `stream` at steps of `length`: a window's first
/// `length` bytes are a model's input, its last `length` the labels.
std::vector<std::string> windows(const std::string &stream, size_t length);

} // namespace dlc::tools

#endif // DLC_TOOLS_DLC_TRAIN_TEXTCORPUS_H
