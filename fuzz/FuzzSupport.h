//===- FuzzSupport.h - what dlc's libFuzzer targets share ---------------------===//
//
// The targets feed dlc the bytes libFuzzer makes through the same entry points a user's
// files take (a path on disk). Any exception other than dlc::Error escaping a target is
// a finding: dlc promises that everything it throws derives from dlc::Error.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_FUZZ_FUZZSUPPORT_H
#define DLC_FUZZ_FUZZSUPPORT_H

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace dlc::fuzz {

/// A folder of this process's own under /dev/shm (memory, not disk), made once.
inline const std::filesystem::path &scratch() {
  static const std::filesystem::path folder = [] {
    std::filesystem::path path =
        std::filesystem::path("/dev/shm") / ("dlc-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(path);
    return path;
  }();
  return folder;
}

/// Writes `size` bytes to `path`, replacing it.
inline void writeFile(const std::filesystem::path &path, const uint8_t *data, size_t size) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char *>(data), std::streamsize(size));
}

} // namespace dlc::fuzz

#endif // DLC_FUZZ_FUZZSUPPORT_H
