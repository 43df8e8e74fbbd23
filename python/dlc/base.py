"""dlc's exceptions. Each also derives from the built-in exception Python code catches for
that kind of mistake: ``except ValueError`` catches an uneven split_and_load as it does in
MXNet, ``except dlc.base.DLCError`` (alias ``MXNetError``) catches every dlc error."""
from ._dlc import (DeviceMismatchError, DLCError, DTypeError, IndexError, OutOfMemoryError,
                   ShapeError, UnsupportedError, ValueError)

MXNetError = DLCError

__all__ = ["DLCError", "MXNetError", "DeviceMismatchError", "ShapeError", "DTypeError",
           "OutOfMemoryError", "UnsupportedError", "ValueError", "IndexError"]
