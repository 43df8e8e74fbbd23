//===- ModelZoo.cpp - get_model: names, MXNet's published weights -------------===//
//
// The names are MXNet 1.9.1's model store names (the ones its get_model takes); the
// SHA-1 of each published `.params` file is the model store's, so a file MXNet
// downloaded into ~/.mxnet/models is found and checked the way MXNet checks it. Nothing
// is downloaded: a missing or different file is an error that says which file to put
// where.
//
//===----------------------------------------------------------------------===//
#include "dlc/Gluon/ModelZoo.h"

#include "dlc/Core/Error.h"
#include "dlc/Gluon/VisionTransformer.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <vector>

namespace dlc::gluon::model_zoo::vision {

namespace {

struct Entry {
  /// imageSize: ModelOptions::image_size, which only networks built for one size read.
  std::function<std::shared_ptr<HybridBlock>(int64_t classes, int64_t imageSize)> make;
  const char *sha1; ///< of MXNet's published .params file; null: MXNet published none
};

const std::vector<std::pair<std::string, Entry>> &zoo() {
  static const std::vector<std::pair<std::string, Entry>> table = [] {
    std::vector<std::pair<std::string, Entry>> t;
    auto add = [&](std::string name, Entry e) { t.emplace_back(std::move(name), std::move(e)); };
    const std::pair<int, const char *> v1[] = {{18, "a0666292f0a30ff61f857b0b66efc0228eb6a54b"},
                                               {34, "48216ba99a8b1005d75c0f3a0c422301a0473233"},
                                               {50, "0aee57f96768c0a2d5b23a6ec91eb08dfb0a45ce"},
                                               {101, "d988c13d6159779e907140a638c56f229634cb02"},
                                               {152, "671c637a14387ab9e2654eafd0d493d86b1c8579"}};
    const std::pair<int, const char *> v2[] = {{18, "a81db45fd7b7a2d12ab97cd88ef0a5ac48b8f657"},
                                               {34, "9d6b80bbc35169de6b6edecffdd6047c56fdd322"},
                                               {50, "ecdde35339c1aadbec4f547857078e734a76fb49"},
                                               {101, "18e93e4f48947e002547f50eabbcc9c83e516aa6"},
                                               {152, "f2695542de38cf7e71ed58f02893d82bb409415e"}};
    for (auto [layers, sha] : v1)
      add("resnet" + std::to_string(layers) + "_v1",
          {[layers = layers](int64_t c, int64_t) { return resnet(1, layers, c); }, sha});
    for (auto [layers, sha] : v2)
      add("resnet" + std::to_string(layers) + "_v2",
          {[layers = layers](int64_t c, int64_t) { return resnet(2, layers, c); }, sha});
    const std::tuple<int, bool, const char *> vggs[] = {
        {11, false, "dd221b160977f36a53f464cb54648d227c707a05"},
        {13, false, "6bc5de58a05a5e2e7f493e2d75a580d83efde38c"},
        {16, false, "e660d4569ccb679ec68f1fd3cce07a387252a90a"},
        {19, false, "ad2f660d101905472b83590b59708b71ea22b2e5"},
        {11, true, "ee79a8098a91fbe05b7a973fed2017a6117723a8"},
        {13, true, "7d97a06c3c7a1aecc88b6e7385c2b373a249e95e"},
        {16, true, "7f01cf050d357127a73826045c245041b0df7363"},
        {19, true, "f360b758e856f1074a85abd5fd873ed1d98297c3"}};
    for (auto [layers, bn, sha] : vggs)
      add("vgg" + std::to_string(layers) + (bn ? "_bn" : ""),
          {[layers = layers, bn = bn](int64_t c, int64_t) { return vgg(layers, bn, c); }, sha});
    add("alexnet", {[](int64_t c, int64_t) { return alexnet(c); }, "44335d1f0046b328243b32a26a4fbd62d9057b45"});
    const std::pair<int, const char *> densenets[] = {
        {121, "f27dbf2dbd5ce9a80b102d89c7483342cd33cb31"},
        {161, "b6c8a95717e3e761bd88d145f4d0a214aaa515dc"},
        {169, "2603f878403c6aa5a71a124c4a3307143d6820e9"},
        {201, "1cdbc116bc3a1b65832b18cf53e1cb8e7da017eb"}};
    for (auto [layers, sha] : densenets)
      add("densenet" + std::to_string(layers),
          {[layers = layers](int64_t c, int64_t) { return densenet(layers, c); }, sha});
    add("squeezenet1.0", {[](int64_t c, int64_t) { return squeezenet("1.0", c); },
                          "264ba4970a0cc87a4f15c96e25246a1307caf523"});
    add("squeezenet1.1", {[](int64_t c, int64_t) { return squeezenet("1.1", c); },
                          "33ba0f93753c83d86e1eb397f38a667eaf2e9376"});
    add("inceptionv3", {[](int64_t c, int64_t) { return inception_v3(c); },
                        "ed47ec45a937b656fcc94dabde85495bbef5ba1f"});
    const std::tuple<const char *, double, const char *> mobilenets[] = {
        {"1.0", 1.0, "6b8c5106c730e8750bcd82ceb75220a3351157cd"},
        {"0.75", 0.75, "529b2c7f4934e6cb851155b22c96c9ab0a7c4dc2"},
        {"0.5", 0.5, "8e9d539cc66aa5efa71c4b6af983b936ab8701c3"},
        {"0.25", 0.25, "9f83e440996887baf91a6aff1cccc1c903a64274"}};
    for (auto [suffix, m, sha] : mobilenets)
      add(std::string("mobilenet") + suffix, {[m = m](int64_t c, int64_t) { return mobilenet(m, c); }, sha});
    const std::tuple<const char *, double, const char *> mobilenetsV2[] = {
        {"1.0", 1.0, "36da4ff1867abccd32b29592d79fc753bca5a215"},
        {"0.75", 0.75, "e2be7b72a79fe4a750d1dd415afedf01c3ea818d"},
        {"0.5", 0.5, "aabd26cd335379fcb72ae6c8fac45a70eab11785"},
        {"0.25", 0.25, "ae8f9392789b04822cbb1d98c27283fc5f8aa0a7"}};
    for (auto [suffix, m, sha] : mobilenetsV2)
      add(std::string("mobilenetv2_") + suffix,
          {[m = m](int64_t c, int64_t) { return mobilenet_v2(m, c); }, sha});
    // MXNet 1.9.1 has no ViT; its weights come from Hugging Face (text::from_pretrained).
    add("vit_b_16", {[](int64_t c, int64_t imageSize) {
                       ViTConfig config = ViTConfig::b16();
                       config.classes = c;
                       if (imageSize > 0)
                         config.image_size = imageSize;
                       return vit(config);
                     },
                     nullptr});
    return t;
  }();
  return table;
}

const Entry &entryOf(const std::string &name) {
  for (const auto &[known, entry] : zoo())
    if (known == name)
      return entry;
  std::string list;
  for (const std::string &known : model_names())
    list += (list.empty() ? "" : ", ") + known;
  throw ValueError("model_zoo.vision: no model named '" + name + "'; the zoo has " + list);
}

std::string storeRoot(const std::string &root) {
  if (!root.empty())
    return root[0] == '~' && std::getenv("HOME") ? std::getenv("HOME") + root.substr(1) : root;
  if (const char *home = std::getenv("MXNET_HOME"))
    return std::string(home) + "/models";
  const char *home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.mxnet/models";
}

/// The file's SHA-1 in hex, or "" if it cannot be read.
std::string sha1Of(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return "";
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha1(), nullptr) != 1)
    throw Error("model_zoo.vision: OpenSSL could not start a SHA-1 digest");
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), std::streamsize(buffer.size()));
    if (in.gcount() > 0)
      EVP_DigestUpdate(ctx.get(), buffer.data(), size_t(in.gcount()));
  }
  if (in.bad())
    return "";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  std::string hex;
  char byte[3];
  for (unsigned i = 0; i < length; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

} // namespace

const std::vector<std::string> &model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto &entry : zoo())
      out.push_back(entry.first);
    return out;
  }();
  return names;
}

const std::vector<std::string> &mxnet_model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto &[name, entry] : zoo())
      if (entry.sha1)
        out.push_back(name);
    return out;
  }();
  return names;
}

std::string pretrained_file(const std::string &name, const std::string &root) {
  const Entry &entry = entryOf(name);
  if (!entry.sha1)
    throw ValueError("model_zoo.vision: MXNet published no weights for " + name +
                     "; load a Hugging Face checkpoint of it with "
                     "model_zoo::text::from_pretrained(folder)");
  return storeRoot(root) + "/" + name + "-" + std::string(entry.sha1, 8) + ".params";
}

std::shared_ptr<HybridBlock> get_model(const std::string &name, const ModelOptions &options) {
  const Entry &entry = entryOf(name);
  if (options.classes <= 0)
    throw ValueError("model_zoo.vision: " + name + " needs classes > 0, got " +
                     std::to_string(options.classes));
  if (options.image_size < 0)
    throw ValueError("model_zoo.vision: " + name + " needs image_size >= 0, got " +
                     std::to_string(options.image_size));
  std::shared_ptr<HybridBlock> net = entry.make(options.classes, options.image_size);
  if (!options.pretrained)
    return net;
  const std::string path = pretrained_file(name, options.root);
  if (options.classes != 1000)
    throw ValueError("model_zoo.vision: " + name + "'s published weights classify 1000 classes, "
                     "asked for " + std::to_string(options.classes) +
                     "; load them with classes=1000 and replace the output layer");
  if (!std::filesystem::exists(path))
    throw Error("model_zoo.vision: " + name + "'s weights are not in the model store: put "
                  "MXNet's file " + std::filesystem::path(path).filename().string() + " (the "
                  "model store's " + name + " weights, SHA-1 " + entry.sha1 + ") at " + path +
                  " (nothing is downloaded)");
  std::string sha1 = sha1Of(path);
  if (sha1 != entry.sha1)
    throw Error("model_zoo.vision: " + path + " is not MXNet's " + name + " file: its SHA-1 is " +
                  (sha1.empty() ? std::string("unreadable") : sha1) + ", expected " + entry.sha1);
  net->load_parameters(path);
  return net;
}

} // namespace dlc::gluon::model_zoo::vision
