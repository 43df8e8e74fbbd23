//===- dlc.h - the one header an application includes -------------------------===//
#ifndef DLC_DLC_H
#define DLC_DLC_H

#include "dlc/Core/DType.h"
#include "dlc/Core/Device.h"
#include "dlc/Core/Error.h"
#include "dlc/Frontend/Autograd.h"
#include "dlc/Frontend/Collectives.h"
#include "dlc/Frontend/CompiledModel.h"
#include "dlc/Frontend/Hybridize.h"
#include "dlc/Frontend/NN.h"
#include "dlc/Frontend/NumPy.h"
#include "dlc/Frontend/Tensor.h"
#include "dlc/Gluon/Block.h"
#include "dlc/Gluon/Data.h"
#include "dlc/Gluon/Initializer.h"
#include "dlc/Gluon/Layers.h"
#include "dlc/Gluon/Loss.h"
#include "dlc/Gluon/Parameter.h"
#include "dlc/Gluon/SafeTensors.h"
#include "dlc/Gluon/TrainStep.h"
#include "dlc/Gluon/Trainer.h"
#include "dlc/Gluon/Vision.h"
#include "dlc/Runtime/Allocator.h"
#include "dlc/Runtime/Collectives.h"
#include "dlc/Runtime/Engine.h"
#include "dlc/Runtime/Gpu.h"
#include "dlc/Runtime/Kernel.h"
#include "dlc/Runtime/Numerics.h"

#endif // DLC_DLC_H
