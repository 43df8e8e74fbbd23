//===- DLCDialectTest.cpp - the dlc dialect through its C++ builders ---------===//
//
// The tracer will build dlc ops from C++ without writing result types; these tests
// check that the inferred types, device lookups and folds are what it will rely on.
//
//===----------------------------------------------------------------------===//
#include "dlc/Dialect/DLC/IR/DLCOps.h"
#include "dlc/Frontend/OpRegistry.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::dlc;

namespace {

class DLCDialectTest : public ::testing::Test {
protected:
  DLCDialectTest() : builder(&context) {
    context.loadDialect<DLCDialect, func::FuncDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getF32Type());
  }

  /// A function whose arguments have `types`, with the builder inside its body.
  func::FuncOp makeFunction(ArrayRef<Type> types) {
    auto fn = builder.create<func::FuncOp>(builder.getUnknownLoc(), "f",
                                           builder.getFunctionType(types, {}));
    builder.setInsertionPointToStart(fn.addEntryBlock());
    return fn;
  }

  MLIRContext context;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
};

TEST_F(DLCDialectTest, BuildersInferTheLeafNetworkShapes) {
  Location loc = builder.getUnknownLoc();
  func::FuncOp fn = makeFunction({f32({4, 3, 128, 128}), f32({32, 3, 2, 2}), f32({32}),
                                  f32({100, 21632}), f32({100})});
  Value x = fn.getArgument(0);
  Value conv = builder.create<Conv2DOp>(loc, x, fn.getArgument(1), fn.getArgument(2));
  EXPECT_EQ(conv.getType(), f32({4, 32, 127, 127}));
  Value relu = builder.create<ReluOp>(loc, conv);
  Value pooled = builder.create<MaxPool2DOp>(loc, relu, builder.getDenseI64ArrayAttr({4, 4}),
                                             builder.getDenseI64ArrayAttr({2, 2}),
                                             builder.getDenseI64ArrayAttr({0, 0}),
                                             /*ceil_mode=*/false);
  EXPECT_EQ(pooled.getType(), f32({4, 32, 62, 62}));

  // A made-up (4, 128, 13, 13) activation flattens to the first dense layer's width.
  Value deep = builder.create<RandomNormalOp>(loc, f32({4, 128, 13, 13}), llvm::APFloat(0.0),
                                              llvm::APFloat(1.0), /*seed=*/1);
  Value flat = builder.create<FlattenOp>(loc, deep);
  EXPECT_EQ(flat.getType(), f32({4, 21632}));
  Value dense = builder.create<DenseOp>(loc, flat, fn.getArgument(3), fn.getArgument(4));
  EXPECT_EQ(dense.getType(), f32({4, 100}));
  builder.create<func::ReturnOp>(loc);
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(DLCDialectTest, TrainingBatchNormHasThreeResults) {
  Location loc = builder.getUnknownLoc();
  func::FuncOp fn = makeFunction({f32({4, 8, 5, 5}), f32({8})});
  Value x = fn.getArgument(0), v = fn.getArgument(1);
  auto train = builder.create<BatchNormOp>(loc, x, v, v, ValueRange{v, v}, llvm::APFloat(1e-5),
                                           llvm::APFloat(0.9), /*axis=*/1,
                                           /*training=*/true);
  EXPECT_EQ(train->getNumResults(), 3u);
  EXPECT_EQ(train.getBatchStats()[0].getType(), f32({8}));
  // Training does not read the running statistics: they may be left out.
  auto trainOnly = builder.create<BatchNormOp>(loc, x, v, v, ValueRange{}, llvm::APFloat(1e-5),
                                               llvm::APFloat(0.9), /*axis=*/1,
                                               /*training=*/true);
  EXPECT_EQ(trainOnly->getNumResults(), 3u);
  auto infer = builder.create<BatchNormOp>(loc, x, v, v, ValueRange{v, v}, llvm::APFloat(1e-5),
                                           llvm::APFloat(0.9), /*axis=*/1,
                                           /*training=*/false);
  EXPECT_EQ(infer->getNumResults(), 1u);
}

TEST_F(DLCDialectTest, InferenceReportsTheShapesInvolved) {
  Location loc = builder.getUnknownLoc();
  func::FuncOp fn = makeFunction({f32({4, 3}), f32({5})});
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  SmallVector<Type> types;
  LogicalResult result = AddOp::inferReturnTypes(
      &context, loc, fn.getArguments(), builder.getDictionaryAttr({}),
      OpaqueProperties(nullptr), RegionRange(), types);
  EXPECT_TRUE(failed(result));
  EXPECT_NE(message.find("'dlc.add' op"), std::string::npos) << message;
  EXPECT_NE(message.find("4x3"), std::string::npos) << message;
  EXPECT_NE(message.find("do not broadcast"), std::string::npos) << message;
}

TEST_F(DLCDialectTest, DevicesComeFromArgumentsAndCopies) {
  Location loc = builder.getUnknownLoc();
  auto gpu1 = DeviceAttr::get(&context, DeviceKind::gpu, 1);
  auto cpu0 = DeviceAttr::get(&context, DeviceKind::cpu, 0);
  EXPECT_EQ(gpu1.str(), "gpu(1)");
  func::FuncOp fn = makeFunction({f32({3, 4})});
  fn.setArgAttr(0, DLCDialect::getDeviceAttrName(), gpu1);
  Value x = fn.getArgument(0);
  EXPECT_EQ(getKnownDevice(x), gpu1);
  Value moved = builder.create<CopyOp>(loc, x, cpu0);
  EXPECT_EQ(getKnownDevice(moved), cpu0);

  // x + moved mixes gpu(1) and cpu(0): the verifier must refuse it.
  builder.create<AddOp>(loc, x, moved);
  builder.create<func::ReturnOp>(loc);
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  EXPECT_TRUE(failed(verify(*module)));
  EXPECT_NE(message.find("gpu(1)"), std::string::npos) << message;
  EXPECT_NE(message.find("cpu(0)"), std::string::npos) << message;
}

TEST_F(DLCDialectTest, FoldsDropIdentities) {
  Location loc = builder.getUnknownLoc();
  func::FuncOp fn = makeFunction({f32({4, 3})});
  Value x = fn.getArgument(0);
  Value one = builder.create<ConstantOp>(
      loc, DenseElementsAttr::get(f32({3}), builder.getF32FloatAttr(1.0f)));
  EXPECT_EQ(builder.createOrFold<MulOp>(loc, x, one), x);
  // 1 of a bigger shape broadcasts x: the product is not x.
  Value bigOne = builder.create<ConstantOp>(
      loc, DenseElementsAttr::get(f32({2, 4, 3}), builder.getF32FloatAttr(1.0f)));
  EXPECT_NE(builder.createOrFold<MulOp>(loc, x, bigOne), x);
  Value t = builder.create<TransposeOp>(loc, x, builder.getDenseI64ArrayAttr({1, 0}));
  EXPECT_EQ(builder.createOrFold<TransposeOp>(loc, t, builder.getDenseI64ArrayAttr({1, 0})),
            x);
}

TEST_F(DLCDialectTest, DeviceAttributeRoundTripsThroughText) {
  Attribute parsed = parseAttribute("#dlc.device<cpu_pinned:0>", &context);
  auto device = dyn_cast_or_null<DeviceAttr>(parsed);
  ASSERT_TRUE(device);
  EXPECT_EQ(device.getKind(), DeviceKind::cpu_pinned);
  EXPECT_EQ(device.getOrdinal(), 0);
  std::string printed;
  llvm::raw_string_ostream os(printed);
  Attribute(device).print(os);
  EXPECT_EQ(os.str(), "#dlc.device<cpu_pinned:0>");
}

// The eager registry and the dialect must not drift apart: every eager op that claims a
// dialect op names one that exists ("eager." ops are eager-only by design).
TEST_F(DLCDialectTest, EveryEagerOpNamesARegisteredDialectOp) {
  for (const ::dlc::OpDef *op : ::dlc::all_ops()) {
    if (llvm::StringRef(op->dialect_op).starts_with("eager."))
      continue;
    EXPECT_TRUE(RegisteredOperationName::lookup(op->dialect_op, &context).has_value())
        << op->name << " maps to " << op->dialect_op << ", which the dialect lacks";
  }
}

// Code generation builds fused regions from the ops' scalar bodies: every op that dlc-fuse
// may put in an element-wise region has one (a new element-wise op without one fails
// here, not when a region first holds it).
TEST_F(DLCDialectTest, EveryElementwiseKernelOpHasAScalarBody) {
  int checked = 0;
  for (RegisteredOperationName op : context.getRegisteredOperations()) {
    if (op.getDialectNamespace() != DLCDialect::getDialectNamespace() ||
        !op.hasTrait<mlir::dlc::OpTrait::ElementwiseKernel>())
      continue;
    EXPECT_TRUE(op.hasInterface<ScalarBodyOpInterface>())
        << op.getStringRef().str() << " is an element-wise kernel without a scalar body";
    ++checked;
  }
  EXPECT_GE(checked, 18) << "the element-wise ops: 9 unary, 7 binary, 2 gradients";
}

} // namespace
