//===- AtomicFile.cpp - writing a file so that a failure loses nothing --------===//
#include "dlc/Core/AtomicFile.h"

#include "dlc/Core/Error.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace dlc {

namespace {

/// The file a write to `path` lands in: `path` with its symbolic links followed (a
/// dangling link names the file the write creates). Empty after too many links.
std::string followLinks(std::string path) {
  for (int hops = 0; hops < 40; ++hops) {
    struct stat status {};
    if (lstat(path.c_str(), &status) != 0 || !S_ISLNK(status.st_mode))
      return path;
    std::vector<char> target(PATH_MAX + 1);
    ssize_t length = readlink(path.c_str(), target.data(), target.size() - 1);
    if (length < 0)
      return path;
    std::string next(target.data(), size_t(length));
    size_t slash = path.rfind('/');
    if (next.empty() || next[0] != '/')
      next = (slash == std::string::npos ? "" : path.substr(0, slash + 1)) + next;
    path = next;
  }
  return "";
}

/// Writes into `file`, flushes it and reports a failure as an Error about `path`.
void writeAndFlush(std::ofstream &file, const std::function<void(std::ostream &)> &write,
                   const std::function<void()> &cleanUp, const std::string &prefix,
                   const std::string &path) {
  try {
    write(file);
  } catch (...) {
    file.close();
    cleanUp();
    throw;
  }
  file.flush();
  if (!file) {
    std::string why = std::strerror(errno);
    file.close();
    cleanUp();
    throw Error(prefix + "cannot write '" + path + "': " + why);
  }
}

} // namespace

void write_file_atomically(const std::string &path,
                           const std::function<void(std::ostream &)> &write,
                           const std::string &what, std::string temporary_suffix) {
  static std::atomic<unsigned> calls{0};
  const std::string prefix = what.empty() ? "" : what + ": ";
  struct stat existing {};
  bool exists = stat(path.c_str(), &existing) == 0;
  if (exists && S_ISDIR(existing.st_mode))
    throw Error(prefix + "cannot write '" + path + "': it is a directory");
  if (exists && !S_ISREG(existing.st_mode)) {
    // A device, FIFO or socket: there is nothing to keep whole, and a rename would put
    // a file where the node was (as root, `--output /dev/null` replaced /dev/null).
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    if (!file)
      throw Error(prefix + "cannot write '" + path + "': " + std::strerror(errno));
    writeAndFlush(file, write, [] {}, prefix, path);
    return;
  }
  const std::string target = followLinks(path);
  if (target.empty())
    throw Error(prefix + "cannot write '" + path + "': " + std::strerror(ELOOP));
  if (temporary_suffix.empty())
    temporary_suffix = ".tmp." + std::to_string(::getpid()) + "." + std::to_string(calls++);
  const std::string temporary = target + temporary_suffix;
  auto removeTemporary = [&] { std::remove(temporary.c_str()); };
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file)
      throw Error(prefix + "cannot write '" + path + "': cannot create '" + temporary +
                  "': " + std::strerror(errno));
    writeAndFlush(file, write, removeTemporary, prefix, path);
  }
  if (exists) { // the new file takes the old one's permissions, as an edit in place would
    std::error_code ignored;
    std::filesystem::permissions(temporary,
                                 std::filesystem::perms(existing.st_mode & 07777), ignored);
  }
  if (std::rename(temporary.c_str(), target.c_str()) != 0) {
    std::string why = std::strerror(errno);
    removeTemporary();
    throw Error(prefix + "cannot rename '" + temporary + "' to '" + target + "': " + why);
  }
}

} // namespace dlc
