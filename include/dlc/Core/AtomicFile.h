//===- AtomicFile.h - writing a file so that a failure loses nothing ----------===//
//
// Every file dlc writes (parameters, model files, exported modules, dlc-train's logs)
// goes through a temporary file beside it and a rename: a killed process leaves the old
// file whole, and a failed write (a full disk) is an error naming the file and the
// reason, never a truncated file under the real name.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_ATOMICFILE_H
#define DLC_CORE_ATOMICFILE_H

#include <functional>
#include <ostream>
#include <string>

namespace dlc {

/// Writes `path` with what `write` puts into the stream it is given, through
/// `temporary` (default: `path`.tmp.<process>.<count>, unique to the call) renamed over
/// `path` once everything is written and flushed. Throws dlc::Error "<what>: cannot
/// write '<path>': <reason>" (or "cannot rename ...") and removes the temporary; `what`
/// may be empty. An exception from `write` also removes the temporary, and passes on.
void write_file_atomically(const std::string &path,
                           const std::function<void(std::ostream &)> &write,
                           const std::string &what = "", std::string temporary = "");

} // namespace dlc

#endif // DLC_CORE_ATOMICFILE_H
