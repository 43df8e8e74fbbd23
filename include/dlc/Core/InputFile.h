//===- InputFile.h - what a path holds, before a reader seeks in it -----------===//
//
// Checkpoints (safetensors, MXNet .params) are read at random offsets: the reader takes
// the file's size and seeks. A directory opens as a stream of no sensible size, a FIFO
// or a device has no size at all, so each is named for what it is before any byte is
// read, instead of a header length made of nothing.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_INPUTFILE_H
#define DLC_CORE_INPUTFILE_H

#include <string>

namespace dlc {

/// Why `path` is not a regular file that can be read at random ("it is a directory",
/// "it is a FIFO, not a regular file", "cannot open: No such file or directory"), or ""
/// when it is one.
std::string regular_file_problem(const std::string &path);

} // namespace dlc

#endif // DLC_CORE_INPUTFILE_H
