//===- Progress.cpp - dlc-train's progress line ---------------------------------===//
#include "Progress.h"

#include <chrono>
#include <cstdio>
#include <unistd.h>

namespace dlc::tools {

void showProgress(int epoch, size_t done, size_t total, const std::string &rate,
                  const std::string &metrics, double etaSeconds) {
  static const bool terminal = isatty(fileno(stderr));
  static auto last = std::chrono::steady_clock::now();
  static size_t lastTenth = 0;
  size_t tenth = total ? 10 * done / total : 10;
  bool finished = done >= total;
  double sinceLast =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - last).count();
  if (terminal ? (!finished && sinceLast < 0.5) : (tenth == lastTenth && !finished))
    return;
  last = std::chrono::steady_clock::now();
  lastTenth = finished ? 0 : tenth;
  const int width = 30;
  int filled = total ? int(width * done / total) : width;
  std::fprintf(stderr, "%sEpoch %d [%s%s] %zu/%zu  %s  %s  ETA %.0fs %s", terminal ? "\r" : "",
               epoch, std::string(size_t(filled), '#').c_str(),
               std::string(size_t(width - filled), '.').c_str(), done, total, rate.c_str(),
               metrics.c_str(), etaSeconds, terminal ? "" : "\n");
  std::fflush(stderr);
}

} // namespace dlc::tools
