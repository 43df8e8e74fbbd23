// RUN: dlc-opt %s --dlc-plan-memory -split-input-file -verify-diagnostics | FileCheck %s

// A chain of element-wise ops runs in place: each result is written over its input,
// which nothing reads afterwards, so one block serves the whole chain. The IR is
// unchanged.
// expected-remark @+1 {{memory plan on cpu(0): arena 256 bytes for 1280 bytes of intermediates (4 placed in freed memory, 4 of them in place), results 256 bytes}}
func.func @chain(%x: tensor<64xf32> {dlc.device = #dlc.device<cpu:0>}) -> tensor<64xf32> {
  // expected-remark @+1 {{result #0 at arena offset 0 (256 bytes)}}
  %0 = dlc.relu %x : tensor<64xf32>
  // expected-remark @+1 {{result #0 at arena offset 0 (256 bytes)}}
  %1 = dlc.tanh %0 : tensor<64xf32>
  // expected-remark @+1 {{result #0 at arena offset 0 (256 bytes)}}
  %2 = dlc.exp %1 : tensor<64xf32>
  // expected-remark @+1 {{result #0 at arena offset 0 (256 bytes)}}
  %3 = dlc.sigmoid %2 : tensor<64xf32>
  // expected-remark @+1 {{result #0 at arena offset 0 (256 bytes)}}
  %4 = dlc.neg %3 : tensor<64xf32>
  // expected-remark @+1 {{result #0 in result #0 (256 bytes)}}
  %5 = dlc.relu %4 : tensor<64xf32>
  return %5 : tensor<64xf32>
}
// CHECK-LABEL: func.func @chain
// CHECK-COUNT-2: dlc.relu
// CHECK: return

// -----

// A value read again later stays live: %0 is added at the end, so tanh cannot write over
// it; the add writes over tanh's result, its first input that dies there. A reshape is
// a view of its input, and a result that is a view gets a copy.
// expected-remark @+1 {{memory plan on cpu(1): arena 512 bytes for 768 bytes of intermediates (1 placed in freed memory, 1 of them in place), results 256 bytes}}
func.func @live(%x: tensor<64xf32> {dlc.device = #dlc.device<cpu:1>}) -> tensor<8x8xf32> {
  // expected-remark @+1 {{result #0 at arena offset 0 (256 bytes)}}
  %0 = dlc.relu %x : tensor<64xf32>
  // expected-remark @+1 {{result #0 at arena offset 256 (256 bytes)}}
  %1 = dlc.tanh %0 : tensor<64xf32>
  // expected-remark @+1 {{result #0 at arena offset 256 (256 bytes)}}
  %2 = dlc.add %1, %0 : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  // expected-remark @+1 {{result #0 views its input, at arena offset 256 (256 bytes)}}
  %3 = dlc.reshape %2 : tensor<64xf32> to tensor<8x8xf32>
  return %3 : tensor<8x8xf32>
}

// -----

// A single-device program has no transfers: a dlc.copy (even to the same device) cannot
// be planned there.
// expected-error @+1 {{cannot plan memory: dlc.copy}}
func.func @no_kernel(%a: tensor<3xf32> {dlc.device = #dlc.device<cpu:0>}) -> tensor<3xf32> {
  %c = dlc.copy %a : tensor<3xf32> to #dlc.device<cpu:0>
  return %c : tensor<3xf32>
}

// -----

// A fused element-wise region is one step: its result gets one place.
// expected-remark @+1 {{memory plan on cpu(0): arena 0 bytes for 0 bytes of intermediates (0 placed in freed memory, 0 of them in place), results 16 bytes}}
func.func @fused(%x: tensor<4xf32> {dlc.device = #dlc.device<cpu:0>}) -> tensor<4xf32> {
  // expected-remark @+1 {{result #0 in result #0 (16 bytes)}}
  %0 = dlc.fused "elementwise" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = dlc.exp %a : tensor<4xf32>
    %t = dlc.tanh %e : tensor<4xf32>
    dlc.yield %t : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// A function on several devices (a sharded training step) is planned per device: one
// arena each; values read from another device keep their block to the end.
// expected-remark @+1 {{memory plan over 2 devices: cpu(0) arena 256 bytes, cpu(1) arena 512 bytes}}
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
// expected-error @+1 {{cannot plan memory: @huge: cannot lower a value of type tensor<4294967296x4294967296xf32>: shape 4294967296x4294967296 of 4-byte elements would hold more than 2^63 bytes}}
func.func @huge(%a: tensor<4294967296x4294967296xf32> {dlc.device = #dlc.device<cpu:0>}) -> tensor<4294967296x4294967296xf32> {
  %x = dlc.relu %a {dlc.device = #dlc.device<cpu:0>} : tensor<4294967296x4294967296xf32>
  return %x : tensor<4294967296x4294967296xf32>
}
