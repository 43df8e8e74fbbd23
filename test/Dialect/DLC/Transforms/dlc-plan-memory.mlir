// RUN: dlc-opt %s --dlc-plan-memory -split-input-file -verify-diagnostics | FileCheck %s
// RUN: dlc-opt %S/Inputs/leafnet-step.mlir --dlc-pipeline=cpu | FileCheck %s --check-prefix=LEAFNET

// A chain of element-wise ops runs in place: each result is written over its input,
// which nothing reads afterwards, so one block serves the whole chain; the last one is
// written straight into the caller's result buffer.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: attributes {dlc.arenas = [#dlc.arena<cpu:0, 256 bytes>]}
// CHECK: dlc.relu %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 0>]}
// CHECK-NEXT: dlc.tanh %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 0, in_place>]}
// CHECK-NEXT: dlc.exp %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 0, in_place>]}
// CHECK-NEXT: dlc.sigmoid %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 0, in_place>]}
// CHECK-NEXT: dlc.neg %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 0, in_place>]}
// CHECK-NEXT: dlc.relu %{{.*}} {dlc.storage = [#dlc.storage<result 0 at 0>]}
func.func @chain(%x: tensor<64xf32> {dlc.device = #dlc.device<cpu:0>}) -> tensor<64xf32> {
  %0 = dlc.relu %x : tensor<64xf32>
  %1 = dlc.tanh %0 : tensor<64xf32>
  %2 = dlc.exp %1 : tensor<64xf32>
  %3 = dlc.sigmoid %2 : tensor<64xf32>
  %4 = dlc.neg %3 : tensor<64xf32>
  %5 = dlc.relu %4 : tensor<64xf32>
  return %5 : tensor<64xf32>
}

// -----

// A value read again later stays live: %0 is added at the end, so tanh cannot write over
// it; the add writes over tanh's result, its first input that dies there. A reshape is
// a view: it lives in its input. A returned view is copied into its result buffer at
// the end, so what it views lives until then; %0's block is free again for %4.
// CHECK-LABEL: func.func @live
// CHECK-SAME: attributes {dlc.arenas = [#dlc.arena<cpu:1, 512 bytes>]}
// CHECK: dlc.relu %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 0>]}
// CHECK-NEXT: dlc.tanh %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 256>]}
// CHECK-NEXT: dlc.add %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 256, in_place>]}
// CHECK-NEXT: dlc.reshape %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 256>]}
// CHECK-NEXT: dlc.relu %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 0, freed>]}
// CHECK-NEXT: dlc.exp %{{.*}} {dlc.storage = [#dlc.storage<result 1 at 0>]}
func.func @live(%x: tensor<64xf32> {dlc.device = #dlc.device<cpu:1>}) -> (tensor<8x8xf32>, tensor<64xf32>) {
  %0 = dlc.relu %x : tensor<64xf32>
  %1 = dlc.tanh %0 : tensor<64xf32>
  %2 = dlc.add %1, %0 : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %3 = dlc.reshape %2 : tensor<64xf32> to tensor<8x8xf32>
  %4 = dlc.relu %x : tensor<64xf32>
  %5 = dlc.exp %4 : tensor<64xf32>
  return %3, %5 : tensor<8x8xf32>, tensor<64xf32>
}

// -----

// Parts of a split along the first axis follow each other in the value split. An
// argument returned as it is, and a value returned twice, are copied into their result
// buffers: only the first return of %y owns its buffer.
// CHECK-LABEL: func.func @views_and_repeats
// CHECK-SAME: attributes {dlc.arenas = [#dlc.arena<cpu:0, 0 bytes>]}
// CHECK: dlc.split %arg0 {{.*}}dlc.storage = [#dlc.storage<argument 0 at 0>, #dlc.storage<argument 0 at 32>]
// CHECK: dlc.add {{.*}}dlc.storage = [#dlc.storage<result 1 at 0>]
func.func @views_and_repeats(%x: tensor<4x4xf32> {dlc.device = #dlc.device<cpu:0>})
    -> (tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %a, %b = dlc.split %x {axis = 0 : i64, sections = 2 : i64} : tensor<4x4xf32> -> tensor<2x4xf32>, tensor<2x4xf32>
  %y = dlc.add %a, %b : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %x, %y, %y : tensor<4x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// A fused element-wise region on a CPU is one step: its result gets one place, and its
// intermediates none (they never leave the cache).
// CHECK-LABEL: func.func @fused
// CHECK: dlc.fused "elementwise"(%{{.*}}) {dlc.storage = [#dlc.storage<result 0 at 0>]}
// CHECK-NOT: dlc.op_by_op
// CHECK: dlc.exp %{{.*}} : tensor<4xf32>
// CHECK-NEXT: dlc.tanh %{{.*}} : tensor<4xf32>
func.func @fused(%x: tensor<4xf32> {dlc.device = #dlc.device<cpu:0>}) -> tensor<4xf32> {
  %0 = dlc.fused "elementwise" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = dlc.exp %a : tensor<4xf32>
    %t = dlc.tanh %e : tensor<4xf32>
    dlc.yield %t : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// A GPU has no chunked element-wise kernel: the region runs op by op, and its body's
// values are planned like any others.
// CHECK-LABEL: func.func @op_by_op
// CHECK-SAME: dlc.arenas = [#dlc.arena<gpu:0, 1024 bytes>]
// CHECK: dlc.fused "elementwise"(%{{.*}}) {dlc.device = #dlc.device<gpu:0>, dlc.op_by_op, dlc.storage = [#dlc.storage<result 0 at 0>]}
// CHECK: dlc.exp %{{.*}} {dlc.storage = [#dlc.storage<arena 0 at 0>]}
// CHECK-NEXT: dlc.tanh %{{.*}} {dlc.storage = [#dlc.storage<result 0 at 0>]}
func.func @op_by_op(%x: tensor<256xf32> {dlc.device = #dlc.device<gpu:0>}) -> tensor<256xf32> {
  %0 = dlc.fused "elementwise" (%x) {dlc.device = #dlc.device<gpu:0>} : (tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%a: tensor<256xf32>):
    %e = dlc.exp %a : tensor<256xf32>
    %t = dlc.tanh %e : tensor<256xf32>
    dlc.yield %t : tensor<256xf32>
  }
  return %0 : tensor<256xf32>
}

// -----

// A function on several devices (a sharded training step) has one arena per device, in
// the order the devices first run. Values an all-reduce reads keep their block to the
// end (each device's queue runs on its own); within a device, blocks are reused.
// CHECK-LABEL: func.func @two_devices
// CHECK-SAME: dlc.arenas = [#dlc.arena<cpu:0, 256 bytes>, #dlc.arena<cpu:1, 512 bytes>]
// CHECK: dlc.relu %{{.*}}dlc.storage = [#dlc.storage<arena 0 at 0>]
// CHECK-NEXT: dlc.relu %{{.*}}dlc.storage = [#dlc.storage<arena 1 at 0>]
// CHECK-NEXT: dlc.tanh %{{.*}}dlc.storage = [#dlc.storage<arena 1 at 0, in_place>]
// CHECK-NEXT: dlc.all_reduce {{.*}}dlc.storage = [#dlc.storage<result 0 at 0>, #dlc.storage<arena 1 at 256>]
func.func @two_devices(%a: tensor<64xf32> {dlc.device = #dlc.device<cpu:0>},
                       %b: tensor<64xf32> {dlc.device = #dlc.device<cpu:1>}) -> tensor<64xf32> {
  %x = dlc.relu %a {dlc.device = #dlc.device<cpu:0>} : tensor<64xf32>
  %y = dlc.relu %b {dlc.device = #dlc.device<cpu:1>} : tensor<64xf32>
  %z = dlc.tanh %y {dlc.device = #dlc.device<cpu:1>} : tensor<64xf32>
  %r0, %r1 = dlc.all_reduce sum %x, %z {devices = [#dlc.device<cpu:0>, #dlc.device<cpu:1>]} : tensor<64xf32>, tensor<64xf32>
  return %r0 : tensor<64xf32>
}

// -----

// A tensor of more than 2^63 bytes cannot exist; its size used to wrap around and be
// planned as "(0 bytes)".
// expected-error @+1 {{cannot plan memory for a value of type 'tensor<4294967296x4294967296xf32>': shape 4294967296x4294967296 of 4-byte elements would hold more than 2^63 bytes}}
func.func @huge(%a: tensor<4294967296x4294967296xf32> {dlc.device = #dlc.device<cpu:0>}) -> tensor<4294967296x4294967296xf32> {
  %x = dlc.relu %a {dlc.device = #dlc.device<cpu:0>} : tensor<4294967296x4294967296xf32>
  return %x : tensor<4294967296x4294967296xf32>
}

// -----

// A declaration has nothing to plan.
// CHECK-LABEL: func.func private @declared
// CHECK-NOT: dlc.arenas
func.func private @declared(tensor<4xf32>) -> tensor<4xf32>

// -----

// The runtime runs a function's one block from start to end.
// expected-error @+1 {{dlc-plan-memory: @two_blocks has 2 blocks; the runtime runs functions of one block that ends with func.return}}
func.func @two_blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
^unreachable:
  return %x : tensor<4xf32>
}

// The LeafNetwork's training step through hybridize()'s pipeline: the plan the runtime
// executes (DLC_DUMP_IR=dir writes the programs, with the same places). The forward
// writes the activations the backward reads straight into their result buffers; the
// blocked activation that the classifier flattens is converted to plain in an arena
// block, and the flattening reshape is a view of that block. The backward's pooling
// gradients (the ReLU's folded in) reuse arena memory that earlier values freed.
// LEAFNET-LABEL: func.func @forward
// LEAFNET-SAME: dlc.arenas = [#dlc.arena<cpu:0, {{[0-9]+}} bytes>]
// LEAFNET: dlc.fused "conv2d_relu"({{.*}}dlc.storage = [#dlc.storage<result 21 at 0>]
// LEAFNET: dlc.to_layout {{.*}} to #dlc.layout<plain> {{{.*}}dlc.storage = [#dlc.storage<arena 0 at [[FLAT:[0-9]+]]>]}
// LEAFNET: dlc.reshape {{.*}}dlc.storage = [#dlc.storage<arena 0 at [[FLAT]]>]
// LEAFNET-LABEL: func.func @backward
// LEAFNET-SAME: dlc.arenas = [#dlc.arena<cpu:0, {{[0-9]+}} bytes>]
// LEAFNET: dlc.fused "max_pool2d_backward_relu"{{.*}}dlc.storage = [#dlc.storage<arena 0 at {{[0-9]+}}, freed>]
// LEAFNET: dlc.conv2d_backward_filter {{.*}}dlc.storage = [#dlc.storage<result {{[0-9]+}} at 0>, #dlc.storage<result {{[0-9]+}} at 0>]

// -----

// Each value fits in 2^63 bytes, but two of them live at once do not: the arena's size
// wrapped to -2^63 bytes before the sum was checked.
func.func @too_much_at_once(%x: tensor<1152921504606846976xf32>) -> tensor<1152921504606846976xf32> {
  %0 = dlc.relu %x : tensor<1152921504606846976xf32>
  // expected-error @+1 {{cannot plan memory: with this value (4611686018427387904 bytes), the values live at once on cpu(0) would need more than 2^63 bytes}}
  %1 = dlc.exp %x : tensor<1152921504606846976xf32>
  %2 = dlc.add %0, %1 : (tensor<1152921504606846976xf32>, tensor<1152921504606846976xf32>) -> tensor<1152921504606846976xf32>
  return %2 : tensor<1152921504606846976xf32>
}
