//===- InputFile.cpp - what a path holds, before a reader seeks in it ---------===//
#include "dlc/Core/InputFile.h"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace dlc {

std::string regular_file_problem(const std::string &path) {
  struct stat status {};
  if (stat(path.c_str(), &status) != 0)
    return std::string("cannot open: ") + std::strerror(errno);
  if (S_ISREG(status.st_mode))
    return "";
  if (S_ISDIR(status.st_mode))
    return "it is a directory";
  const char *kind = S_ISFIFO(status.st_mode)  ? "a FIFO"
                     : S_ISCHR(status.st_mode) ? "a character device"
                     : S_ISBLK(status.st_mode) ? "a block device"
                     : S_ISSOCK(status.st_mode) ? "a socket"
                                                : "not a file";
  return std::string("it is ") + kind + ", not a regular file that can be read at random";
}

} // namespace dlc
