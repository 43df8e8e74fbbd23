//===- AtomicFile.cpp - writing a file so that a failure loses nothing --------===//
#include "dlc/Core/AtomicFile.h"

#include "dlc/Core/Error.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace dlc {

void write_file_atomically(const std::string &path,
                           const std::function<void(std::ostream &)> &write,
                           const std::string &what, std::string temporary) {
  static std::atomic<unsigned> calls{0};
  if (temporary.empty())
    temporary = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(calls++);
  const std::string prefix = what.empty() ? "" : what + ": ";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file)
      throw Error(prefix + "cannot write '" + path + "': cannot create '" + temporary +
                  "': " + std::strerror(errno));
    try {
      write(file);
    } catch (...) {
      file.close();
      std::remove(temporary.c_str());
      throw;
    }
    file.flush();
    if (!file) {
      std::string why = std::strerror(errno);
      file.close();
      std::remove(temporary.c_str());
      throw Error(prefix + "cannot write '" + path + "': " + why);
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw Error(prefix + "cannot rename '" + temporary + "' to '" + path + "': " + why);
  }
}

} // namespace dlc
