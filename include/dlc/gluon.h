//===- gluon.h - the whole framework: dlc.h plus Gluon and hybridize -----------===//
//
// What a training program includes: the embedding API of dlc/dlc.h (tensors, eager ops,
// compiled models) plus Gluon's blocks, parameters, Trainer and data, and hybridize(),
// which compiles through MLIR. Programs that include it link dlc_gluon (in the build
// tree); an embedder that only runs compiled models includes dlc/dlc.h and links libdlc.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_GLUON_H
#define DLC_GLUON_H

#include "dlc/dlc.h"
#include "dlc/Hybridize/CompiledFunction.h"
#include "dlc/Gluon/Activations.h"
#include "dlc/Gluon/Block.h"
#include "dlc/Gluon/Data.h"
#include "dlc/Gluon/Embedding.h"
#include "dlc/Gluon/TextModels.h"
#include "dlc/Gluon/Transformer.h"
#include "dlc/Gluon/Initializer.h"
#include "dlc/Gluon/Layers.h"
#include "dlc/Gluon/Loss.h"
#include "dlc/Gluon/Normalization.h"
#include "dlc/Gluon/Parameter.h"
#include "dlc/Gluon/TrainStep.h"
#include "dlc/Gluon/Trainer.h"
#include "dlc/Gluon/Vision.h"
#include "dlc/Gluon/VisionTransformer.h"

#endif // DLC_GLUON_H
