// Every verifier message of the dlc dialect, one case per split.
// RUN: dlc-opt %s -split-input-file -verify-diagnostics

// conv2d: the weight's input channels (times groups) must match the input's channels.
func.func @conv_wrong_channels(%x: tensor<4x3x8x8xf32>, %w: tensor<16x2x2x2xf32>) {
  // expected-error @+2 {{'dlc.conv2d' op input 4x3x8x8 has 3 channels but weight 16x2x2x2 with groups=1 expects 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.conv2d %x, %w : (tensor<4x3x8x8xf32>, tensor<16x2x2x2xf32>) -> tensor<4x16x7x7xf32>
  return
}

// -----

// conv2d: output channels must divide into the groups.
func.func @conv_groups(%x: tensor<1x4x5x5xf32>, %w: tensor<5x2x3x3xf32>) {
  // expected-error @+2 {{not divisible by groups=2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.conv2d %x, %w {groups = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<5x2x3x3xf32>) -> tensor<1x5x3x3xf32>
  return
}

// -----

// conv2d: window attributes have exactly two entries.
func.func @conv_stride_entries(%x: tensor<1x4x5x5xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+2 {{stride must have 2 entries (H, W), got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.conv2d %x, %w {stride = array<i64: 1, 1, 1>} : (tensor<1x4x5x5xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  return
}

// -----

// conv2d: the written result type must be the inferred one.
func.func @conv_wrong_result(%x: tensor<4x3x8x8xf32>, %w: tensor<16x3x2x2xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x16x7x7xf32>' are incompatible with return type(s) of operation 'tensor<4x16x8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.conv2d %x, %w : (tensor<4x3x8x8xf32>, tensor<16x3x2x2xf32>) -> tensor<4x16x8x8xf32>
  return
}

// -----

// add: shapes must broadcast.
func.func @bad_broadcast(%x: tensor<4x3xf32>, %y: tensor<5xf32>) {
  // expected-error @+2 {{'dlc.add' op shapes 4x3 and 5 do not broadcast (dimension 1 of the result: 3 vs 5)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.add %x, %y : (tensor<4x3xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  return
}

// -----

// leaky_relu: the slope broadcasts against the input (PReLU's per-channel slopes are
// shaped to the channel axis).
func.func @slope_on_the_wrong_axis(%x: tensor<2x8x4x4xf32>, %slope: tensor<8xf32>) {
  // expected-error @+2 {{'dlc.leaky_relu' op shapes 2x8x4x4 and 8 do not broadcast (dimension 3 of the result: 4 vs 8)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.leaky_relu %x, %slope : (tensor<2x8x4x4xf32>, tensor<8xf32>) -> tensor<2x8x4x4xf32>
  return
}

// -----

// elu: floating-point operands only.
func.func @integer_elu(%x: tensor<4xi32>, %alpha: tensor<i32>) {
  // expected-error @+1 {{'dlc.elu' op operand #0 must be}}
  %0 = dlc.elu %x, %alpha : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  return
}

// -----

// add: one element type; dlc.cast converts.
func.func @mixed_element_types(%x: tensor<4xf32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{requires the same element type for all operands and results}}
  %0 = dlc.add %x, %y : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

// Tensors must be statically shaped.
func.func @dynamic_shape(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor}}
  %0 = dlc.relu %x : tensor<?x3xf32>
  return
}

// -----

// Element types outside f32, f16, bf16, i1, i32, i64, ui8 are refused.
func.func @f64_tensor(%x: tensor<3xf64>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of}}
  %0 = dlc.exp %x : tensor<3xf64>
  return
}

// -----

// Operands of one op must live on one device.
func.func @mismatched_devices(%x: tensor<3x4xf32> {dlc.device = #dlc.device<gpu:0>},
                              %y: tensor<3x4xf32> {dlc.device = #dlc.device<gpu:1>}) {
  // expected-error @+1 {{'dlc.add' op operands live on different devices: operand #0 on gpu(0), operand #1 on gpu(1); move one with dlc.copy first}}
  %0 = dlc.add %x, %y : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

// A device learned from a dlc.copy counts as well.
func.func @copied_elsewhere(%x: tensor<3x4xf32> {dlc.device = #dlc.device<cpu:0>}) {
  %y = dlc.copy %x : tensor<3x4xf32> to #dlc.device<cpu:1>
  // expected-error @+1 {{operand #0 on cpu(0), operand #1 on cpu(1)}}
  %0 = dlc.mul %x, %y : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return
}

// -----

// An op placed on a device must find its operands there.
func.func @op_device_vs_operand(%x: tensor<3x4xf32> {dlc.device = #dlc.device<cpu:0>}) {
  // expected-error @+1 {{'dlc.relu' op runs on gpu(0) but operand #0 lives on cpu(0); move it with dlc.copy first}}
  %0 = dlc.relu %x {dlc.device = #dlc.device<gpu:0>} : tensor<3x4xf32>
  return
}

// -----

// Constants have no device: canonicalization would not keep it.
func.func @constant_device() {
  // expected-error @+1 {{'dlc.constant' op has no device: a constant is available on every device that uses it; drop 'dlc.device'}}
  %0 = dlc.constant dense<1.0> : tensor<2xf32> {dlc.device = #dlc.device<gpu:0>}
  return
}

// -----

// Device ordinals are not negative.
func.func @negative_ordinal() {
  // expected-error @+1 {{device ordinal must be >= 0, got -1}}
  %0 = dlc.random_uniform {seed = 1 : i64, dlc.device = #dlc.device<gpu:-1>} : tensor<2xf32>
  return
}

// -----

// Device kinds are MXNet's.
func.func @unknown_device_kind() {
  // expected-error @+1 {{unknown device kind 'tpu'; expected cpu, gpu, cpu_pinned or cpu_shared}}
  %0 = dlc.random_uniform {seed = 1 : i64, dlc.device = #dlc.device<tpu:0>} : tensor<2xf32>
  return
}

// -----

// dlc.device holds a #dlc.device.
func.func @device_not_a_device() {
  // expected-error @+1 {{'dlc.device' on an op must be a #dlc.device, got 3 : i64}}
  %0 = dlc.random_uniform {seed = 1 : i64, dlc.device = 3} : tensor<2xf32>
  return
}

// -----

// dlc.name on an argument is a string.
func.func @argument_name_not_string(%x: tensor<2xf32> {dlc.name = 3 : i64}) {
  // expected-error @-1 {{'dlc.name' on argument #0 must be a string, got 3 : i64}}
  return
}

// -----

// dlc.updates names an argument of the function.
func.func @updates_out_of_range(%x: tensor<2xf32>) -> (tensor<2xf32> {dlc.updates = 1 : i64}) {
  // expected-error @-1 {{'dlc.updates' on result #0 must name an argument of the function, got 1 : i64}}
  return %x : tensor<2xf32>
}

// -----

// dlc.updates writes a result back into an argument of the same type.
func.func @updates_type(%x: tensor<2xf32>, %y: tensor<3xf32>) -> (tensor<3xf32> {dlc.updates = 0 : i64}) {
  // expected-error @-1 {{'dlc.updates' on result #0: argument #0 has another type}}
  return %y : tensor<3xf32>
}

// -----

// dlc.saved marks a result; it carries no value.
func.func @saved_with_a_value(%x: tensor<2xf32>) -> (tensor<2xf32> {dlc.saved = 1 : i64}) {
  // expected-error @-1 {{'dlc.saved' on result #0 must be a unit attribute, got 1 : i64}}
  return %x : tensor<2xf32>
}

// -----

// dlc.place asks for a device.
func.func @place_not_a_device(%x: tensor<2xf32>) {
  // expected-error @+1 {{'dlc.place' must be a #dlc.device, got "gpu"}}
  %0 = dlc.relu %x {dlc.place = "gpu"} : tensor<2xf32>
  return
}

// -----

// Only known dlc attributes may be attached.
func.func @unknown_dlc_attribute() {
  // expected-error @+1 {{unknown dlc attribute 'dlc.where' on an op}}
  %0 = dlc.random_uniform {seed = 1 : i64, dlc.where = 1} : tensor<2xf32>
  return
}

// -----

// Function arguments carry devices only as #dlc.device.
// expected-error @+1 {{'dlc.device' on argument #0 must be a #dlc.device, got "gpu"}}
func.func @arg_device_string(%x: tensor<2xf32> {dlc.device = "gpu"}) {
  return
}

// -----

// max_pool2d: the window must fit the (padded) input.
func.func @pool_window_too_big(%x: tensor<1x8x3x3xf32>) {
  // expected-error @+2 {{'dlc.max_pool2d' op window [4, 4] does not fit input 1x8x3x3 padded by [0, 0]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.max_pool2d %x {kernel = array<i64: 4, 4>} : (tensor<1x8x3x3xf32>) -> tensor<1x8x1x1xf32>
  return
}

// -----

// avg_pool2d: strides are positive.
func.func @pool_zero_stride(%x: tensor<1x8x8x8xf32>) {
  // expected-error @+2 {{stride [0, 2] must be >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.avg_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 0, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x4x4xf32>
  return
}

// -----

// max_pool2d: padding smaller than the window.
func.func @pool_padding(%x: tensor<1x8x8x8xf32>) {
  // expected-error @+2 {{padding [2, 2] must be smaller than the window [2, 2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.max_pool2d %x {kernel = array<i64: 2, 2>, padding = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> tensor<1x8x11x11xf32>
  return
}

// -----

// all_reduce: a collective over one device of one process is a mistake.
func.func @all_reduce_one_device(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dlc.all_reduce' op needs at least two devices, or one device in each of several processes (processes = N), got 1 device(s) in one process}}
  %0 = dlc.all_reduce sum %x {devices = [#dlc.device<gpu:0>]} : tensor<4xf32>
  return
}

// -----

// all_reduce: a job has at least one process.
func.func @all_reduce_no_process(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'dlc.all_reduce' op spans 0 processes; expected at least 1}}
  %0:2 = dlc.all_reduce sum %x, %y {devices = [#dlc.device<cpu:0>, #dlc.device<cpu:1>], processes = 0 : i64} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// all_reduce: one operand per device.
func.func @all_reduce_count(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{has 2 operands for 3 devices; expected one per device}}
  %0:2 = dlc.all_reduce sum %x, %y {devices = [#dlc.device<gpu:0>, #dlc.device<gpu:1>, #dlc.device<gpu:2>]} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// all_reduce: devices are distinct.
func.func @all_reduce_twice(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{lists gpu(0) twice}}
  %0:2 = dlc.all_reduce sum %x, %y {devices = [#dlc.device<gpu:0>, #dlc.device<gpu:0>]} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// all_reduce: every operand has one type.
func.func @all_reduce_types(%x: tensor<4xf32>, %y: tensor<5xf32>) {
  // expected-error @+1 {{operand #1 has type 'tensor<5xf32>' but operand #0 has 'tensor<4xf32>'}}
  %0:2 = dlc.all_reduce sum %x, %y {devices = [#dlc.device<gpu:0>, #dlc.device<gpu:1>]} : tensor<4xf32>, tensor<5xf32>
  return
}

// -----

// all_reduce: operand i lives on devices[i].
func.func @all_reduce_placement(%x: tensor<4xf32> {dlc.device = #dlc.device<gpu:1>}, %y: tensor<4xf32>) {
  // expected-error @+1 {{operand #0 lives on gpu(1) but devices[0] is gpu(0)}}
  %0:2 = dlc.all_reduce sum %x, %y {devices = [#dlc.device<gpu:0>, #dlc.device<gpu:1>]} : tensor<4xf32>, tensor<4xf32>
  return
}

// -----

// fused: the body yields the op's result types.
func.func @fused_yields_wrong_type(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dlc.fused' op body yields ('tensor<4x8xf16>') but the op returns ('tensor<4x8xf32>')}}
  %y = dlc.fused (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %h = dlc.cast %a : tensor<4x8xf32> to tensor<4x8xf16>
    dlc.yield %h : tensor<4x8xf16>
  }
  return %y : tensor<4x8xf32>
}

// -----

// fused: the body's arguments are the operands.
func.func @fused_argument_types(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{body argument #0 has type 'tensor<8xf32>' but operand #0 has 'tensor<4x8xf32>'}}
  dlc.fused (%x) : (tensor<4x8xf32>) -> () {
  ^bb0(%a: tensor<8xf32>):
    dlc.yield
  }
  return
}

// -----

// fused: one body argument per operand.
func.func @fused_argument_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{body has 0 arguments for 1 operands}}
  dlc.fused (%x) : (tensor<4x8xf32>) -> () {
    dlc.yield
  }
  return
}

// -----

// yield belongs in a fused body.
func.func @yield_outside(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects parent op 'dlc.fused'}}
  dlc.yield %x : tensor<4xf32>
}

// -----

// reshape: the element count stays.
func.func @reshape_count(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'dlc.reshape' op cannot reshape 4x6 (24 elements) to 5x5 (25 elements)}}
  %0 = dlc.reshape %x : tensor<4x6xf32> to tensor<5x5xf32>
  return
}

// -----

// broadcast_to: numpy rules.
func.func @broadcast_to_bad(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'dlc.broadcast_to' op cannot broadcast 2x3 to 4x3}}
  %0 = dlc.broadcast_to %x : tensor<2x3xf32> to tensor<4x3xf32>
  return
}

// -----

// cast: changes the element type, not the shape.
func.func @cast_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{requires the same shape for all operands and results}}
  %0 = dlc.cast %x : tensor<4xf32> to tensor<5xf16>
  return
}

// -----

// dense: in_units must match.
func.func @dense_features(%x: tensor<4x7xf32>, %w: tensor<100x8xf32>) {
  // expected-error @+2 {{'dlc.dense' op input 4x7 has 7 features but weight 100x8 expects 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.dense %x, %w : (tensor<4x7xf32>, tensor<100x8xf32>) -> tensor<4x100xf32>
  return
}

// -----

// dense: bias has one entry per unit.
func.func @dense_bias(%x: tensor<4x8xf32>, %w: tensor<100x8xf32>, %b: tensor<10xf32>) {
  // expected-error @+2 {{bias must be (100), got 10}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.dense %x, %w, %b : (tensor<4x8xf32>, tensor<100x8xf32>, tensor<10xf32>) -> tensor<4x100xf32>
  return
}

// -----

// matmul: contraction sizes agree.
func.func @matmul_contraction(%a: tensor<4x5xf32>, %b: tensor<6x5xf32>) {
  // expected-error @+2 {{contraction sizes differ: 4x5 has 5, 6x5 has 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.matmul %a, %b : (tensor<4x5xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  return
}

// -----

// batch_norm: per-channel vectors match the channel count.
func.func @batch_norm_gamma(%x: tensor<4x8x5x5xf32>, %g: tensor<7xf32>, %v: tensor<8xf32>) {
  // expected-error @+2 {{gamma must be (8) for input 4x8x5x5 normalized over axis 1, got 7}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.batch_norm %x, %g, %v, %v, %v : (tensor<4x8x5x5xf32>, tensor<7xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8x5x5xf32>
  return
}

// -----

// batch_norm: inference normalizes with the running statistics, so it needs them.
func.func @batch_norm_inference_needs_running_stats(%x: tensor<4x8x5x5xf32>, %v: tensor<8xf32>) {
  // expected-error @+2 {{takes running_mean and running_var after beta (only training mode may leave both out), got 0 more operand(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.batch_norm %x, %v, %v : (tensor<4x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8x5x5xf32>
  return
}

// -----

// batch_norm: the running statistics come as a pair.
func.func @batch_norm_one_running_stat(%x: tensor<4x8x5x5xf32>, %v: tensor<8xf32>) {
  // expected-error @+2 {{got 1 more operand(s)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = dlc.batch_norm %x, %v, %v, %v {training} : (tensor<4x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// batch_norm: training mode also returns the batch mean and variance.
func.func @batch_norm_training_results(%x: tensor<4x8x5x5xf32>, %v: tensor<8xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x8x5x5xf32>', 'tensor<8xf32>', 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<4x8x5x5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.batch_norm %x, %v, %v, %v, %v {training} : (tensor<4x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8x5x5xf32>
  return
}

// -----

// batch_norm: momentum is a fraction.
func.func @batch_norm_momentum(%x: tensor<4x8x5x5xf32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{needs momentum in [0, 1], got 1.5}}
  %0 = dlc.batch_norm %x, %v, %v, %v, %v {momentum = 1.5 : f64} : (tensor<4x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8x5x5xf32>
  return
}

// -----

// batch_norm: epsilon keeps the division safe.
func.func @batch_norm_epsilon(%x: tensor<4x8x5x5xf32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{needs epsilon > 0, got 0}}
  %0 = dlc.batch_norm %x, %v, %v, %v, %v {epsilon = 0.0 : f64} : (tensor<4x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8x5x5xf32>
  return
}

// -----

// batch_norm_backward: grad_output has the input's shape.
func.func @batch_norm_backward_shape(%dy: tensor<4x8x5x4xf32>, %x: tensor<4x8x5x5xf32>, %v: tensor<8xf32>) {
  // expected-error @+2 {{grad_output 4x8x5x4 must have the input's shape 4x8x5x5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = dlc.batch_norm_backward %dy, %x, %v, %v, %v : (tensor<4x8x5x4xf32>, tensor<4x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8x5x5xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// batch_norm: per-channel vectors are float32, also for 16-bit data.
func.func @batch_norm_half_gamma(%x: tensor<4x8x5x5xf16>, %g: tensor<8xf16>, %v: tensor<8xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit float values}}
  %0:3 = dlc.batch_norm %x, %g, %v {training} : (tensor<4x8x5x5xf16>, tensor<8xf16>, tensor<8xf32>) -> (tensor<4x8x5x5xf16>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// batch_norm_backward: grad_output has the input's element type.
func.func @batch_norm_backward_dtype(%dy: tensor<4x8x5x5xf32>, %x: tensor<4x8x5x5xbf16>, %v: tensor<8xf32>) {
  // expected-error @+1 {{needs grad_output of the input's element type 'bf16', got 'f32'}}
  %0:3 = dlc.batch_norm_backward %dy, %x, %v, %v, %v : (tensor<4x8x5x5xf32>, tensor<4x8x5x5xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8x5x5xbf16>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// dropout: ratio in [0, 1).
func.func @dropout_ratio(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'dlc.dropout' op needs ratio in [0, 1), got 1}}
  %0:2 = dlc.dropout %x {ratio = 1.0 : f64, seed = 1 : i64} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  return
}

// -----

// random_uniform: a non-empty interval.
func.func @uniform_interval() {
  // expected-error @+1 {{needs low < high, got low = 1, high = 1}}
  %0 = dlc.random_uniform {low = 1.0 : f64, high = 1.0 : f64, seed = 1 : i64} : tensor<2xf32>
  return
}

// -----

// random_normal: a positive spread.
func.func @normal_stddev() {
  // expected-error @+1 {{needs stddev > 0, got -1}}
  %0 = dlc.random_normal {stddev = -1.0 : f64, seed = 1 : i64} : tensor<2xf32>
  return
}

// -----

// conv2d_backward_data: the result is an input shape the convolution maps to grad_output.
func.func @conv_backward_data(%dy: tensor<4x8x3x3xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+1 {{'dlc.conv2d_backward_data' op grad_output is 4x8x3x3 but the forward op gives 4x8x6x6}}
  %0 = dlc.conv2d_backward_data %dy, %w : (tensor<4x8x3x3xf32>, tensor<8x3x3x3xf32>) -> tensor<4x3x8x8xf32>
  return
}

// -----

// conv2d_backward_filter: the result is the weight shape.
func.func @conv_backward_filter(%dy: tensor<4x8x6x6xf32>, %x: tensor<4x3x8x8xf32>) {
  // expected-error @+1 {{input 4x3x8x8 has 3 channels but weight 8x2x3x3 with groups=1 expects 2}}
  %0 = dlc.conv2d_backward_filter %dy, %x : (tensor<4x8x6x6xf32>, tensor<4x3x8x8xf32>) -> tensor<8x2x3x3xf32>
  return
}

// -----

// conv2d_backward_filter: a bias gradient has one entry per output channel.
func.func @conv_backward_filter_bias(%dy: tensor<4x8x6x6xf32>, %x: tensor<4x3x8x8xf32>) {
  // expected-error @+1 {{grad_bias must have shape (8), one entry per output channel}}
  %0:2 = dlc.conv2d_backward_filter %dy, %x : (tensor<4x8x6x6xf32>, tensor<4x3x8x8xf32>) -> (tensor<8x3x3x3xf32>, tensor<6xf32>)
  return
}

// -----

// max_pool2d_backward: grad_output is the pooled shape of the input.
func.func @max_pool_backward(%dy: tensor<1x8x3x3xf32>, %x: tensor<1x8x8x8xf32>) {
  // expected-error @+1 {{grad_output is 1x8x3x3 but the forward op gives 1x8x4x4}}
  %0 = dlc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x8x3x3xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return
}

// -----

// max_pool2d_indexed: a byte names the tap, so a window has at most 127 taps.
func.func @max_pool_indexed_window(%x: tensor<1x8x12x12xf32>) {
  // expected-error @+1 {{'dlc.max_pool2d_indexed' op keeps a byte per window, so a window has at most 127 taps; got 12x12}}
  %0, %1 = dlc.max_pool2d_indexed %x {kernel = array<i64: 12, 12>} : (tensor<1x8x12x12xf32>) -> (tensor<1x8x1x1xf32>, tensor<1x8x1x1xui8>)
  return
}

// -----

// max_pool2d_indexed: the indices are uint8, of the output's shape.
func.func @max_pool_indexed_type(%x: tensor<1x8x8x8xf32>) {
  // expected-error @+1 {{'dlc.max_pool2d_indexed' op result #1 must be statically shaped tensor of 8-bit unsigned integer values, but got 'tensor<1x8x4x4xi32>'}}
  %0, %1 = "dlc.max_pool2d_indexed"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x8x8x8xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xi32>)
  return
}

// -----

// max_pool2d_backward_indexed: the indices have grad_output's shape.
func.func @max_pool_backward_indexed_shape(%dy: tensor<1x8x4x4xf32>, %where: tensor<1x8x3x3xui8>) {
  // expected-error @+1 {{'dlc.max_pool2d_backward_indexed' op needs indices of grad_output's shape 'tensor<1x8x4x4xf32>', got 'tensor<1x8x3x3xui8>'}}
  %0 = dlc.max_pool2d_backward_indexed %dy, %where {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x8x4x4xf32>, tensor<1x8x3x3xui8>) -> tensor<1x8x8x8xf32>
  return
}

// -----

// max_pool2d_backward_indexed: the result is an input the pooling maps to grad_output.
func.func @max_pool_backward_indexed_result(%dy: tensor<1x8x4x4xf32>, %where: tensor<1x8x4x4xui8>) {
  // expected-error @+1 {{grad_output is 1x8x4x4 but the forward op gives 1x8x5x5}}
  %0 = dlc.max_pool2d_backward_indexed %dy, %where {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xui8>) -> tensor<1x8x10x10xf32>
  return
}

// -----

// avg_pool2d_backward: the result is an input shape the pooling maps to grad_output.
func.func @avg_pool_backward(%dy: tensor<1x8x4x4xf32>) {
  // expected-error @+1 {{grad_output is 1x8x4x4 but the forward op gives 1x8x5x5}}
  %0 = dlc.avg_pool2d_backward %dy {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<1x8x4x4xf32>) -> tensor<1x8x10x10xf32>
  return
}

// -----

// split: the parts cover the input along the axis.
func.func @split_cover(%x: tensor<5x3xf32>) {
  // expected-error @+1 {{'dlc.split' op results do not cover input 5x3 along axis 0: they join to 4x3}}
  %0:2 = dlc.split %x : tensor<5x3xf32> -> tensor<2x3xf32>, tensor<2x3xf32>
  return
}

// -----

// split: the axis exists.
func.func @split_axis(%x: tensor<5x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for input 5x3}}
  %0:2 = dlc.split %x {axis = 2 : i64} : tensor<5x3xf32> -> tensor<2x3xf32>, tensor<3x3xf32>
  return
}

// -----

// concat: shapes agree outside the axis.
func.func @concat_shapes(%a: tensor<3x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+2 {{input #1 2x4 does not match input #0 3x3 outside axis 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.concat %a, %b : (tensor<3x3xf32>, tensor<2x4xf32>) -> tensor<5x3xf32>
  return
}

// -----

// softmax: the axis exists.
func.func @softmax_axis(%x: tensor<4x10xf32>) {
  // expected-error @+1 {{'dlc.softmax' op axis 2 is out of range for input 4x10}}
  %0 = dlc.softmax %x {axis = 2 : i64} : tensor<4x10xf32>
  return
}

// -----

// softmax_cross_entropy: one label per sample.
func.func @loss_labels(%logits: tensor<4x2xf32>, %labels: tensor<3xi32>) {
  // expected-error @+2 {{labels must be (4) for logits 4x2, got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.softmax_cross_entropy %logits, %labels : (tensor<4x2xf32>, tensor<3xi32>) -> tensor<4xf32>
  return
}

// -----

// softmax_cross_entropy_backward: the incoming gradient has the loss shape.
func.func @loss_backward(%d: tensor<3xf32>, %logits: tensor<4x2xf32>, %labels: tensor<4xi32>) {
  // expected-error @+2 {{grad_loss 3 must have the loss shape 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.softmax_cross_entropy_backward %d, %logits, %labels : (tensor<3xf32>, tensor<4x2xf32>, tensor<4xi32>) -> tensor<4x2xf32>
  return
}

// -----

// reduce: each axis once.
func.func @reduce_axis_twice(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{axis -1 is listed twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.reduce sum %x {axes = array<i64: 1, -1>} : (tensor<4x10xf32>) -> tensor<4xf32>
  return
}

// -----

// transpose: a permutation of the dimensions.
func.func @transpose_permutation(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{permutation is not a permutation of 0..2 (entry 1 is 0)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.transpose %x {permutation = array<i64: 0, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  return
}

// -----

// compare gives i1.
func.func @compare_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = dlc.compare lt, %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// select: both branches have one element type.
func.func @select_element_types(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+2 {{'dlc.select' op on_true and on_false must have one element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.select %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

// matmul: matrices, not vectors (reshape a vector first).
func.func @matmul_vector(%a: tensor<5xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+2 {{operands must have rank >= 2, got 5 and 5x6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.matmul %a, %b : (tensor<5xf32>, tensor<5x6xf32>) -> tensor<6xf32>
  return
}

// -----

// conv2d: the (dilated) kernel fits the padded input.
func.func @conv_kernel_too_big(%x: tensor<1x3x2x2xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{kernel 3x3 (dilation [1, 1]) does not fit input 1x3x2x2 padded by [0, 0]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.conv2d %x, %w : (tensor<1x3x2x2xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
  return
}

// -----

// conv2d: NCHW input.
func.func @conv_rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{input must be NCHW (rank 4), got 3x8x8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.conv2d %x, %w : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// reduce: at least one axis.
func.func @reduce_no_axes(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{axes must not be empty}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.reduce sum %x {axes = array<i64>} : (tensor<4x10xf32>) -> tensor<4x10xf32>
  return
}

// -----

// reduce: axes exist.
func.func @reduce_axis_range(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{axis 2 is out of range for input 4x10}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.reduce max %x {axes = array<i64: 2>} : (tensor<4x10xf32>) -> tensor<4x10xf32>
  return
}

// -----

// softmax_cross_entropy_backward: the gradient and the logits share an element type.
func.func @loss_backward_types(%d: tensor<4xf16>, %logits: tensor<4x2xf32>, %labels: tensor<4xi32>) {
  // expected-error @+2 {{grad_loss and logits must have one element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.softmax_cross_entropy_backward %d, %logits, %labels : (tensor<4xf16>, tensor<4x2xf32>, tensor<4xi32>) -> tensor<4x2xf32>
  return
}

// -----

// Function results carry devices only as #dlc.device.
// expected-error @+1 {{'dlc.device' on result #0 must be a #dlc.device, got 1 : i64}}
func.func @result_device(%x: tensor<2xf32>) -> (tensor<2xf32> {dlc.device = 1}) {
  return %x : tensor<2xf32>
}

// -----

// argmax: the axis exists.
func.func @argmax_axis(%x: tensor<4x10xf32>) {
  // expected-error @+2 {{'dlc.argmax' op axis 2 is out of range for input 4x10}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.argmax %x {axis = 2 : i64} : (tensor<4x10xf32>) -> tensor<4xi64>
  return
}

// -----

// Optimizer updates: a 0-d rate.
func.func @update_rate_not_scalar(%w: tensor<4x8xf32>, %g: tensor<4x8xf32>, %r: tensor<1xf32>) {
  // expected-error @+1 {{'dlc.sgd_update' op needs a 0-d rate, got 1}}
  %0 = dlc.sgd_update %w, %g, %r {rescale_grad = 1.0 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Optimizer updates: the state has the weight's shape.
func.func @update_state_shape(%w: tensor<4x8xf32>, %g: tensor<4x8xf32>, %s: tensor<8x4xf32>, %r: tensor<f32>) {
  // expected-error @+1 {{'dlc.sgd_momentum_update' op needs every operand but the rate of the weight's shape 4x8, got 8x4}}
  %0:2 = dlc.sgd_momentum_update %w, %g, %s, %r {momentum = 0.9 : f64, rescale_grad = 1.0 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  return
}

// -----

// Optimizer updates: float32 only.
func.func @update_f16(%w: tensor<4x8xf16>, %g: tensor<4x8xf16>, %r: tensor<f32>) {
  // expected-error @+1 {{'dlc.sgd_update' op operand #0 must be statically shaped tensor of 32-bit float values}}
  %0 = dlc.sgd_update %w, %g, %r {rescale_grad = 1.0 : f64} : (tensor<4x8xf16>, tensor<4x8xf16>, tensor<f32>) -> tensor<4x8xf16>
  return
}

// -----

// dlc.targets: what each kind of device runs, on a module.
// expected-error @+1 {{'dlc.targets' holds #dlc.target entries only, got #dlc.device<gpu:0>}}
module attributes {dlc.targets = [#dlc.device<gpu:0>]} {
}

// -----

// expected-error @+1 {{'dlc.targets' describes gpu twice}}
module attributes {dlc.targets = [#dlc.target<gpu, ops = []>, #dlc.target<gpu, ops = ["dlc.add"]>]} {
}

// -----

func.func @targets_on_a_function() attributes {dlc.targets = []} {
  return
}
// expected-error @-3 {{'dlc.targets' is an array of #dlc.target on a module}}

// -----

// expected-error @+1 {{a target is a kind of device that computes (cpu or gpu); cpu_pinned memory computes with cpu's kernels}}
module attributes {dlc.targets = [#dlc.target<cpu_pinned, ops = []>]} {
}

// -----

// expected-error @+1 {{a target's ops are op names ("dlc.add"), got 3}}
module attributes {dlc.targets = [#dlc.target<cpu, ops = [3]>]} {
}

// -----

// Layouts: only 4-D float32 tensors whose channels fill blocks of 16 (or 8) can be blocked.
func.func @to_layout_unblockable(%x: tensor<2x8x4x4xf32>) {
  // expected-error @+1 {{'dlc.to_layout' op cannot block 'tensor<2x8x4x4xf32>' as nChw16c: only 4-D float32 tensors whose channels are a multiple of 16 have that layout}}
  %0 = dlc.to_layout %x : tensor<2x8x4x4xf32> to #dlc.layout<nChw16c>
  return
}

// -----

func.func @to_layout_unblockable_by_8(%x: tensor<2x12x4x4xf32>) {
  // expected-error @+1 {{'dlc.to_layout' op cannot block 'tensor<2x12x4x4xf32>' as nChw8c: only 4-D float32 tensors whose channels are a multiple of 8 have that layout}}
  %0 = dlc.to_layout %x : tensor<2x12x4x4xf32> to #dlc.layout<nChw8c>
  return
}

// -----

func.func @layouts_per_result(%x: tensor<2x16x4x4xf32>) {
  // expected-error @+1 {{'dlc.layouts' lists one #dlc.layout per result (1), got []}}
  %0 = dlc.relu %x {dlc.layouts = []} : tensor<2x16x4x4xf32>
  return
}

// -----

func.func @layouts_unblockable(%x: tensor<2x8x4x4xf32>) {
  // expected-error @+1 {{'dlc.layouts': result #0 ('tensor<2x8x4x4xf32>') cannot be nChw16c}}
  %0 = dlc.relu %x {dlc.layouts = [#dlc.layout<nChw16c>]} : tensor<2x8x4x4xf32>
  return
}

// -----

// expected-error @+1 {{argument #0 ('tensor<4xf32>') cannot be nChw8c}}
func.func @argument_unblockable(%x: tensor<4xf32> {dlc.layout = #dlc.layout<nChw8c>}) {
  return
}

// -----

// expected-error @+1 {{'dlc.saved_from' on argument #0 is [@function, result number], got [1]}}
func.func @saved_from_malformed(%x: tensor<4xf32> {dlc.saved_from = [1]}) {
  return
}

// -----

// expected-error @+1 {{'dlc.blocked_results' is a unit attribute of a function}}
func.func @blocked_results_not_unit() attributes {dlc.blocked_results = 1} {
  return
}

// -----

func.func @storage_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dlc.storage' lists one #dlc.storage per result (1), got []}}
  %0 = dlc.relu %x {dlc.storage = []} : tensor<4xf32>
  return
}

// -----

func.func @storage_reused_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{only arena blocks are reused, not result 0}}
  %0 = dlc.relu %x {dlc.storage = [#dlc.storage<result 0 at 0, freed>]} : tensor<4xf32>
  return
}

// -----

func.func @storage_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{a storage's index and offset are not negative, got 0 and -64}}
  %0 = dlc.relu %x {dlc.storage = [#dlc.storage<arena 0 at -64>]} : tensor<4xf32>
  return
}

// -----

func.func @storage_kind(%x: tensor<4xf32>) {
  // expected-error @+1 {{unknown storage 'heap'; expected argument, result, arena or prepared}}
  %0 = dlc.relu %x {dlc.storage = [#dlc.storage<heap 0 at 0>]} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'dlc.arenas' is an array of #dlc.arena on a function}}
func.func @arenas_not_arenas() attributes {dlc.arenas = [1]} {
  return
}

// -----

// expected-error @+1 {{an arena has a device and a size of zero or more bytes, got -1}}
func.func @arena_negative() attributes {dlc.arenas = [#dlc.arena<cpu:0, -1 bytes>]} {
  return
}

// -----

func.func @op_by_op_not_fused(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dlc.op_by_op' is a unit attribute of a dlc.fused region}}
  %0 = dlc.relu %x {dlc.op_by_op} : tensor<4xf32>
  return
}

// -----

func.func @kernel_not_fused(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dlc.kernel' on a dlc.fused region names its kernel as @module::@function, got @k}}
  %0 = dlc.relu %x {dlc.kernel = @k} : tensor<4xf32>
  return
}

// -----

func.func @kernel_not_nested(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dlc.kernel' on a dlc.fused region names its kernel as @module::@function, got @k}}
  %0 = dlc.fused "elementwise" (%x) {dlc.kernel = @k} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    %r = dlc.relu %v : tensor<4xf32>
    dlc.yield %r : tensor<4xf32>
  }
  return
}

// -----

func.func @gelu_backward_of_integers(%dy: tensor<4xi32>, %x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = dlc.gelu_backward %dy, %x : tensor<4xi32>
  return
}

// -----

// The float-only element-wise ops refuse integers (their kernels have no integer math).
func.func @softrelu_of_integers(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type values}}
  %0 = dlc.softrelu %x : tensor<4xi32>
  return
}

// -----

// expected-error @+1 {{'dlc.prepared' is a unit attribute of an op}}
func.func @prepared_function() attributes {dlc.prepared} {
  return
}

// -----

func.func @recomputed_not_unit(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dlc.recomputed' is a unit attribute of an op}}
  %0 = dlc.relu %x {dlc.recomputed = 1 : i64} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'dlc.remat' is a function's {budget, peak_before, peak_after} in bytes, got {budget = 4 : i64}}}
func.func @remat_without_peaks() attributes {dlc.remat = {budget = 4 : i64}} {
  return
}

// -----

func.func @remat_complete() attributes {dlc.remat = {budget = 4 : i64, peak_after = 4 : i64, peak_before = 8 : i64}} {
  return
}
// expected-error @+1 {{'dlc.remat' is a function's {budget, peak_before, peak_after} in bytes, got 4 : i64}}
func.func @remat_number() attributes {dlc.remat = 4 : i64} {
  return
}

// -----

func.func @prepared_arena_not_an_arena() attributes {dlc.arenas = []} {
  return
}
// expected-error @+1 {{'dlc.prepared_arena' is a function's #dlc.arena, got 4 : i64}}
func.func @prepared_arena_number() attributes {dlc.prepared_arena = 4 : i64} {
  return
}

// -----

// expected-error @+1 {{'dlc.parameter' on argument #0 is a unit attribute, got "yes"}}
func.func @parameter_not_unit(%w: tensor<4xf32> {dlc.parameter = "yes"}) {
  return
}

// -----

// A convolution algorithm is one the kernels know.
func.func @unknown_conv_algorithm(%x: tensor<1x16x8x8xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'algorithm' [direct, winograd]}}
  %y = dlc.conv2d %x, %w algorithm fastest {padding = array<i64: 1, 1>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  return %y : tensor<1x16x8x8xf32>
}

// -----

// The generic form with an out-of-range value is caught by the attribute's constraint.
func.func @conv_algorithm_out_of_range(%x: tensor<1x16x8x8xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32> {
  // expected-error @+1 {{attribute 'algorithm' failed to satisfy constraint: convolution algorithm}}
  %y = "dlc.conv2d"(%x, %w) {algorithm = 7 : i32} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  return %y : tensor<1x16x8x8xf32>
}

// -----

// Kept operands are operands of the op, in increasing order.
func.func @prepared_operand_out_of_range(%x: tensor<1x16x8x8xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x16x6x6xf32> {
  // expected-error @+1 {{'dlc.prepared_operands' lists operand 2, but the op has 2 operands (expected increasing operand numbers)}}
  %y = dlc.conv2d %x, %w {dlc.prepared_operands = array<i64: 2>} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x6x6xf32>
  return %y : tensor<1x16x6x6xf32>
}

// -----

// expected-error @+1 {{'dlc.prepared_operands' is an op's array<i64> of operand numbers, got array<i64: 0>}}
func.func @prepared_operands_on_a_function() attributes {dlc.prepared_operands = array<i64: 0>} {
  return
}

// -----

// take: the axis exists.
func.func @take_axis(%table: tensor<100x16xf32>, %ids: tensor<4xi64>) {
  // expected-error @+2 {{axis 2 is out of range for input 100x16}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.take %table, %ids {axis = 2 : i64} : (tensor<100x16xf32>, tensor<4xi64>) -> tensor<4x16xf32>
  return
}

// -----

// take: integer indices.
func.func @take_float_indices(%table: tensor<100x16xf32>, %ids: tensor<4xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of}}
  %0 = dlc.take %table, %ids : (tensor<100x16xf32>, tensor<4xf32>) -> tensor<4x16xf32>
  return
}

// -----

// take_backward: the gradient is take's result for these indices.
func.func @take_backward_shape(%d: tensor<5x16xf32>, %ids: tensor<4xi64>) {
  // expected-error @+2 {{grad 5x16 is not take's result for indices 4 along axis 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.take_backward %d, %ids {size = 100 : i64} : (tensor<5x16xf32>, tensor<4xi64>) -> tensor<100x16xf32>
  return
}

// -----

// take_backward: float32 only.
func.func @take_backward_f16(%d: tensor<4x16xf16>, %ids: tensor<4xi64>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float values}}
  %0 = dlc.take_backward %d, %ids {size = 100 : i64} : (tensor<4x16xf16>, tensor<4xi64>) -> tensor<100x16xf16>
  return
}

// -----

// slice: positions inside the axis.
func.func @slice_past_the_end(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{axis 1 of input 4x8: begin 0 and end 9 must lie in [0, 8] for step 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.slice %x {begin = array<i64: 0, 0>, end = array<i64: 4, 9>, step = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x9xf32>
  return
}

// -----

// slice: one entry per axis.
func.func @slice_rank(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{begin, end and step need one entry per dimension of input 4x8, got 1, 1 and 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.slice %x {begin = array<i64: 0>, end = array<i64: 4>, step = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// slice: a step is never 0.
func.func @slice_step_zero(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{the step of axis 0 is 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.slice %x {begin = array<i64: 0, 0>, end = array<i64: 4, 8>, step = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// slice_backward: the gradient has the slice's shape.
func.func @slice_backward_shape(%d: tensor<3x2xf32>) {
  // expected-error @+2 {{grad 3x2 must have the slice's shape 4x2 (of input 4x8)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = dlc.slice_backward %d {begin = array<i64: 0, 1>, end = array<i64: 4, 7>, step = array<i64: 1, 3>, shape = array<i64: 4, 8>} : (tensor<3x2xf32>) -> tensor<4x8xf32>
  return
}

// -----

// layer_norm: gamma has one value per index of the axis.
func.func @layer_norm_gamma(%x: tensor<4x8xf32>, %g: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{gamma must be (8) for input 4x8 normalized over axis -1, got 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %v = dlc.layer_norm %x, %g, %b : (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// layer_norm: epsilon > 0.
func.func @layer_norm_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{needs epsilon > 0, got 0}}
  %y, %m, %v = dlc.layer_norm %x, %g, %g {epsilon = 0.0 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// layer_norm_backward: the statistics are those of the input's rows.
func.func @layer_norm_backward_stats(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %s: tensor<8xf32>) {
  // expected-error @+2 {{mean must be float32 4, the statistics of this input and axis}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %dg, %db = dlc.layer_norm_backward %x, %x, %g, %s, %s : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// layer_norm_backward: the gradient has the input's element type.
func.func @layer_norm_backward_types(%dy: tensor<4x8xbf16>, %x: tensor<4x8xf32>, %g: tensor<8xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{needs grad_output of the input's element type 'f32', got 'bf16'}}
  %dx, %dg, %db = dlc.layer_norm_backward %dy, %x, %g, %s, %s : (tensor<4x8xbf16>, tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// attention: keys have the queries' features.
func.func @attention_features(%q: tensor<2x4x8xf32>, %k: tensor<2x6x7xf32>, %v: tensor<2x6x8xf32>) {
  // expected-error @+2 {{key 2x6x7 must have the query's 8 features (query 2x4x8)}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l, %s = dlc.attention %q, %k, %v {scale = 0.5 : f64} : (tensor<2x4x8xf32>, tensor<2x6x7xf32>, tensor<2x6x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<i64>)
  return
}

// -----

// attention: the mask broadcasts to the scores.
func.func @attention_mask(%q: tensor<2x4x8xf32>, %m: tensor<3x4xi1>) {
  // expected-error @+2 {{mask 3x4 does not broadcast to the scores 2x4x4}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l, %s = dlc.attention %q, %q, %q, %m {scale = 0.5 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<3x4xi1>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<i64>)
  return
}

// -----

// attention: dropout is a probability below 1.
func.func @attention_dropout(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{needs dropout in [0, 1), got 1}}
  %o, %l, %s = dlc.attention %q, %q, %q {scale = 0.5 : f64, dropout = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>, tensor<i64>)
  return
}

// -----

// attention_backward: the log-sum-exp is the forward's.
func.func @attention_backward_lse(%q: tensor<2x4x8xf32>, %l: tensor<2x8xf32>, %s: tensor<i64>) {
  // expected-error @+2 {{logsumexp must be the forward's (float32, the query's shape less its features)}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = dlc.attention_backward %q, %q, %q, %q, %q, %l, %s {scale = 0.5 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8xf32>, tensor<i64>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}
