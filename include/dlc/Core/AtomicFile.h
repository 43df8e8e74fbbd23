//===- AtomicFile.h - writing a file so that a failure loses nothing ----------===//
//
// Every file dlc writes (parameters, model files, exported modules, dlc-train's logs)
// goes through a temporary file beside it and a rename: a killed process leaves the old
// file whole, and a failed write (a full disk) is an error naming the file and the
// reason, never a truncated file under the real name. What is not a file is never
// replaced: a device or a FIFO (`--output /dev/null`) is written in place, as a shell's
// `>` writes it, and a symbolic link stays a link while the file it names is replaced.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_ATOMICFILE_H
#define DLC_CORE_ATOMICFILE_H

#include <functional>
#include <ostream>
#include <string>

namespace dlc {

/// Writes `path` with what `write` puts into the stream it is given. A regular file (or
/// one that does not exist yet) is written through a temporary beside the file `path`
/// names once symbolic links are followed (the file's name plus `temporary_suffix`,
/// default ".tmp.<process>.<count>", unique to the call), renamed over it once everything
/// is written and flushed; the file keeps its permissions. A device, FIFO or socket is
/// written in place. Throws dlc::Error "<what>: cannot write '<path>': <reason>" (or
/// "cannot rename ...") and removes the temporary; `what` may be empty. A directory is
/// refused. An exception from `write` also removes the temporary, and passes on.
void write_file_atomically(const std::string &path,
                           const std::function<void(std::ostream &)> &write,
                           const std::string &what = "", std::string temporary_suffix = "");

} // namespace dlc

#endif // DLC_CORE_ATOMICFILE_H
