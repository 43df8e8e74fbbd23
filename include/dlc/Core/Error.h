//===- Error.h - the exceptions dlc throws ------------------------------------===//
//
// Every message names the op, the shapes, dtypes and devices involved, and what was
// expected, so that a user can fix the call without reading dlc's source. Everything
// dlc throws derives from dlc::Error, so that one catch covers a call.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_CORE_ERROR_H
#define DLC_CORE_ERROR_H

#include <stdexcept>
#include <string>

namespace dlc {

/// Base of dlc's errors.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Inputs of one op live on different devices (MXNet: "inputs not on the same GPU").
class DeviceMismatchError : public Error {
public:
  using Error::Error;
};

/// Shapes that the op cannot take.
class ShapeError : public Error {
public:
  using Error::Error;
};

/// Element types that the op cannot take.
class DTypeError : public Error {
public:
  using Error::Error;
};

/// A device ran out of memory; the message names the device and the request.
class OutOfMemoryError : public Error {
public:
  using Error::Error;
};

/// The op has no kernel for the device, or the feature is not built in.
class UnsupportedError : public Error {
public:
  using Error::Error;
};

/// An argument's value is outside what the call accepts (a negative batch size, an
/// unknown optimizer, a label past the class count): Python's ValueError, which MXNet
/// raises for these.
class ValueError : public Error {
public:
  using Error::Error;
};

/// An index past the end of a dataset or a list: Python's IndexError.
class IndexError : public Error {
public:
  using Error::Error;
};

} // namespace dlc

#endif // DLC_CORE_ERROR_H
