//===- Progress.h - dlc-train's progress line -----------------------------------===//
#ifndef DLC_TOOLS_DLC_TRAIN_PROGRESS_H
#define DLC_TOOLS_DLC_TRAIN_PROGRESS_H

#include <cstddef>
#include <string>

namespace dlc::tools {

/// Redraws an epoch's progress line ("Epoch 3 [####....] 640/6000  <rate>  <metrics>
/// ETA 12s"): at most twice a second on a terminal, at every tenth of the epoch
/// otherwise (so that logs stay short).
void showProgress(int epoch, size_t done, size_t total, const std::string &rate,
                  const std::string &metrics, double etaSeconds);

} // namespace dlc::tools

#endif // DLC_TOOLS_DLC_TRAIN_PROGRESS_H
