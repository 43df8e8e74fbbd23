//===- dlc.h - the embedding API: what libdlc provides -------------------------===//
//
// Tensors on any device, the eager numpy-style and nn ops with autograd, safetensors
// files, and compiled models (CompiledModel: load a .dlc file, run it from any thread).
// libdlc links neither MLIR nor LLVM; `find_package(dlc)` gives it as dlc::dlc. Training
// with Gluon and hybridize() is dlc/gluon.h.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_DLC_H
#define DLC_DLC_H

#include "dlc/Core/CompileOptions.h"
#include "dlc/Core/DType.h"
#include "dlc/Core/Device.h"
#include "dlc/Core/Error.h"
#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/Collectives.h"
#include "dlc/Frontend/CompiledModel.h"
#include "dlc/Frontend/Dist.h"
#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Frontend/SafeTensors.h"
#include "dlc/Frontend/Tensor.h"
#include "dlc/Runtime/Engine/Allocator.h"
#include "dlc/Runtime/Distributed/Collectives.h"
#include "dlc/Runtime/Engine/Engine.h"
#include "dlc/Runtime/Engine/Gpu.h"
#include "dlc/Runtime/Engine/Kernel.h"
#include "dlc/Runtime/Engine/Numerics.h"

#endif // DLC_DLC_H
