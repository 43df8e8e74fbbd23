//===- TextCorpus.cpp - the texts a language model trains on -------------------===//
#include "TextCorpus.h"

#include <dlc/Core/Error.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dlc::tools {

namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("--data: cannot read '" + path.string() + "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

/// The texts of one file: those between "%" lines, or the whole file.
std::vector<std::string> splitTexts(const std::string &content) {
  std::vector<std::string> texts;
  std::string current, line;
  std::istringstream lines(content);
  bool separated = false;
  while (std::getline(lines, line)) {
    if (line == "%") {
      separated = true;
      if (!current.empty())
        texts.push_back(current);
      current.clear();
    } else {
      current += line + "\n";
    }
  }
  if (!current.empty())
    texts.push_back(current);
  if (!separated && !texts.empty())
    return {content};
  return texts;
}

/// The files of a fortunes folder: collections, not their indexes (.dat) or UTF-8
/// copies (.u8).
bool isCollection(const fs::path &path) {
  std::string ext = path.extension().string();
  return ext != ".dat" && ext != ".u8";
}

} // namespace

TextCorpus readCorpus(const std::string &source) {
  std::vector<fs::path> files;
  bool fortunes = source == "fortunes";
  fs::path root = fortunes ? fs::path(kFortunesFolder) : fs::path(source);
  std::error_code error;
  if (fs::is_directory(root, error)) {
    for (const fs::directory_entry &entry : fs::directory_iterator(root))
      if (entry.is_regular_file() && (!fortunes || isCollection(entry.path())))
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
  } else if (fs::is_regular_file(root, error)) {
    files.push_back(root);
  } else {
    throw Error(fortunes ? std::string("--data fortunes: ") + kFortunesFolder +
                               " is missing: install Debian's fortunes package (./dlc.sh "
                               "installs it)"
                         : "--data " + source + ": no such file or folder");
  }
  TextCorpus corpus;
  std::vector<std::string> texts;
  for (const fs::path &file : files) {
    ++corpus.files;
    for (std::string &text : splitTexts(readFile(file)))
      texts.push_back(std::move(text));
  }
  corpus.texts = texts.size();
  if (texts.size() < 2)
    throw Error("--data " + source + ": found " + std::to_string(texts.size()) +
                " text(s) in " + std::to_string(corpus.files) +
                " file(s); a language model needs texts to train on and to hold out");
  // Every twentieth text held out; with fewer than twenty, the last.
  for (size_t i = 0; i < texts.size(); ++i) {
    bool held = texts.size() < 20 ? i + 1 == texts.size() : i % 20 == 19;
    (held ? corpus.heldOut : corpus.train) += texts[i] + "%\n";
  }
  return corpus;
}

std::vector<std::string> windows(const std::string &stream, size_t length) {
  std::vector<std::string> out;
  for (size_t start = 0; start + length + 1 <= stream.size(); start += length)
    out.push_back(stream.substr(start, length + 1));
  return out;
}

} // namespace dlc::tools
