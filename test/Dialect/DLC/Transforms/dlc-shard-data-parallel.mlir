// RUN: dlc-opt %s --dlc-shard-data-parallel="devices=cpu:0,cpu:1" -split-input-file -verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --dlc-shard-data-parallel="devices=cpu:0,cpu:1 bucket-bytes=0" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=SINGLE
// RUN: dlc-opt %s --dlc-shard-data-parallel="devices=cpu:0,cpu:1 sync-batch-norm=true" -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=SYNC
// RUN: not dlc-opt %s --dlc-shard-data-parallel="devices=cpu:0" -split-input-file 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not dlc-opt %s --dlc-shard-data-parallel="devices=cpu:0,npu:1" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: dlc-opt %s --dlc-shard-data-parallel="devices=cpu:1 processes=2" -split-input-file | FileCheck %s --check-prefix=PROC
// RUN: dlc-opt %s --dlc-shard-data-parallel="devices=cpu:1 processes=2 sync-batch-norm=true" -split-input-file | FileCheck %s --check-prefix=SYNCPROC
// RUN: not dlc-opt %s --dlc-shard-data-parallel="devices=cpu:1 processes=0" -split-input-file 2>&1 | FileCheck %s --check-prefix=NOPROC
// ONE: needs at least two devices
// NOPROC: processes=0; a job has at least one process
// BAD: device 'npu:1' is not kind:ordinal

// One SGD step of a dense classifier: the samples are split and copied to each device,
// the weight is replicated (one argument per device), every op runs on its device, the
// gradient is summed as soon as the update needs it (its bucket is not full), both
// replicas apply the same update, and the per-sample losses are gathered on the first
// device.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[W0:[a-z0-9]+]]: tensor<2x4xf32> {dlc.device = #dlc.device<cpu:0>, dlc.name = "w"}
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<2x4xf32> {dlc.device = #dlc.device<cpu:1>, dlc.name = "w"}
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<8x4xf32> {dlc.batch
// CHECK-SAME: -> (tensor<8xf32>, tensor<2x4xf32> {dlc.updates = 0 : i64}, tensor<2x4xf32> {dlc.updates = 1 : i64})
// CHECK: %[[XS:.*]]:2 = dlc.split %[[X]] {{.*}}: tensor<8x4xf32> -> tensor<4x4xf32>, tensor<4x4xf32>
// CHECK: %[[X1:.*]] = dlc.copy %[[XS]]#1 : tensor<4x4xf32> to #dlc.device<cpu:1>
// CHECK: dlc.split %{{.*}} : tensor<8xi64> -> tensor<4xi64>, tensor<4xi64>
// CHECK: dlc.dense %[[XS]]#0, %[[W0]] {dlc.device = #dlc.device<cpu:0>} : (tensor<4x4xf32>, tensor<2x4xf32>) -> tensor<4x2xf32>
// CHECK: dlc.dense %[[X1]], %[[W1]] {dlc.device = #dlc.device<cpu:1>}
// CHECK: dlc.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK: %[[G0:.*]] = dlc.matmul {{.*}} {dlc.device = #dlc.device<cpu:0>, transpose_a}
// CHECK-NEXT: %[[G1:.*]] = dlc.matmul {{.*}} {dlc.device = #dlc.device<cpu:1>, transpose_a}
// CHECK: %[[SUM:.*]]:2 = dlc.all_reduce sum %[[G0]], %[[G1]] {devices = [#dlc.device<cpu:0>, #dlc.device<cpu:1>]}
// CHECK-NEXT: dlc.mul %[[SUM]]#0
// CHECK: dlc.mul %[[SUM]]#1, {{.*}} {dlc.device = #dlc.device<cpu:1>}
// CHECK: %[[NEW0:.*]] = dlc.sub %[[W0]]
// CHECK: %[[NEW1:.*]] = dlc.sub %[[W1]]
// CHECK: %[[BACK:.*]] = dlc.copy %{{.*}} : tensor<4xf32> to #dlc.device<cpu:0>
// CHECK: %[[LOSS:.*]] = dlc.concat %{{.*}}, %[[BACK]] {{.*}} -> tensor<8xf32>
// CHECK: return %[[LOSS]], %[[NEW0]], %[[NEW1]]
// One device in each of two processes (mpirun -np 2): this process's samples stay whole,
// and the gradient's sum spans the processes.
// PROC-LABEL: func.func @step(
// PROC-SAME: tensor<2x4xf32> {dlc.device = #dlc.device<cpu:1>, dlc.name = "w"}
// PROC-NOT: dlc.split
// PROC: %[[D:.*]] = dlc.dense
// PROC-SAME: (tensor<8x4xf32>, tensor<2x4xf32>) -> tensor<8x2xf32>
// PROC: %[[G:.*]] = dlc.matmul
// PROC: dlc.all_reduce sum %[[G]] {devices = [#dlc.device<cpu:1>], processes = 2 : i64} : tensor<2x4xf32>
func.func @step(%w: tensor<2x4xf32> {dlc.name = "w", dlc.device = #dlc.device<cpu:0>},
                %x: tensor<8x4xf32> {dlc.name = "data", dlc.batch, dlc.device = #dlc.device<cpu:0>},
                %y: tensor<8xi64> {dlc.name = "label", dlc.batch, dlc.device = #dlc.device<cpu:0>})
    -> (tensor<8xf32>, tensor<2x4xf32> {dlc.updates = 0 : i64}) {
  %logits = dlc.dense %x, %w : (tensor<8x4xf32>, tensor<2x4xf32>) -> tensor<8x2xf32>
  %loss = dlc.softmax_cross_entropy %logits, %y : (tensor<8x2xf32>, tensor<8xi64>) -> tensor<8xf32>
  %one = dlc.constant dense<1.0> : tensor<8xf32>
  %dlogits = dlc.softmax_cross_entropy_backward %one, %logits, %y : (tensor<8xf32>, tensor<8x2xf32>, tensor<8xi64>) -> tensor<8x2xf32>
  %dw = dlc.matmul %dlogits, %x {transpose_a, dlc.gradient} : (tensor<8x2xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %lr = dlc.constant dense<0.1> : tensor<f32>
  %step = dlc.mul %dw, %lr : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %new = dlc.sub %w, %step : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %loss, %new : tensor<8xf32>, tensor<2x4xf32>
}

// -----

// BatchNorm statistics stay per device (MXNet's semantics): each replica normalizes its
// own part and updates its own running mean; reshapes of the batch follow the part size.
// CHECK-LABEL: func.func @batch_norm(
// CHECK: dlc.batch_norm %{{.*}} {dlc.device = #dlc.device<cpu:0>, training} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
// CHECK: dlc.batch_norm %{{.*}} {dlc.device = #dlc.device<cpu:1>, training} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
// CHECK-NOT: dlc.all_reduce
// CHECK: dlc.reshape %{{.*}} : tensor<2x3x4x4xf32> to tensor<2x48xf32>
// CHECK: return {{.*}} : tensor<4x48xf32>, tensor<3xf32>, tensor<3xf32>
// With sync-batch-norm the replicas' means and second moments are averaged, and each
// replica normalizes with the whole batch's statistics (and updates its running mean
// with them).
// SYNC-LABEL: func.func @batch_norm(
// SYNC: %[[M:.*]]:2 = dlc.all_reduce mean
// SYNC: %[[Q:.*]]:2 = dlc.all_reduce mean
// SYNC: dlc.sub %[[Q]]#0, %{{.*}} {dlc.device = #dlc.device<cpu:0>}
// SYNC: dlc.rsqrt
// SYNC: dlc.reshape %[[M]]#0 {{.*}} : tensor<3xf32> to tensor<1x3x1x1xf32>
// SYNC: dlc.add %{{.*}}, %[[M]]#0 {dlc.device = #dlc.device<cpu:0>}
// SYNC: dlc.add %{{.*}}, %[[M]]#1 {dlc.device = #dlc.device<cpu:1>}
// Across processes the statistics are averaged over every process's replicas.
// SYNCPROC-LABEL: func.func @batch_norm(
// SYNCPROC: dlc.all_reduce mean %{{.*}} {devices = [#dlc.device<cpu:1>], processes = 2 : i64} : tensor<3xf32>
// SYNCPROC: dlc.all_reduce mean %{{.*}} {devices = [#dlc.device<cpu:1>], processes = 2 : i64} : tensor<3xf32>
func.func @batch_norm(%g: tensor<3xf32>, %b: tensor<3xf32>, %rm: tensor<3xf32>,
                      %x: tensor<4x3x4x4xf32> {dlc.batch})
    -> (tensor<4x48xf32>, tensor<3xf32> {dlc.updates = 2 : i64}) {
  %y, %mean, %var = dlc.batch_norm %x, %g, %b {training} : (tensor<4x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
  %flat = dlc.reshape %y : tensor<4x3x4x4xf32> to tensor<4x48xf32>
  %k = dlc.constant dense<0.9> : tensor<f32>
  %m = dlc.mul %rm, %k : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %new = dlc.add %m, %mean : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %flat, %new : tensor<4x48xf32>, tensor<3xf32>
}

// -----

// A batch that does not divide by the number of devices is an error naming both.
// expected-error @+1 {{batch of 5 samples (argument #1, axis 0) does not split evenly over 2 devices}}
func.func @uneven(%w: tensor<3xf32>, %x: tensor<5x3xf32> {dlc.batch}) -> tensor<5x3xf32> {
  %y = dlc.mul %x, %w : (tensor<5x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
  return %y : tensor<5x3xf32>
}

// -----

// A split of the samples' features (GPT-2's fused query-key-value projection): each
// replica's parts keep their feature sizes and take the replica's half of the batch.
// CHECK-LABEL: func.func @feature_split
// CHECK: dlc.split %{{.*}} {axis = 1 : i64, dlc.device = #dlc.device<cpu:0>} : tensor<2x6xf32> -> tensor<2x2xf32>, tensor<2x4xf32>
// CHECK: dlc.split %{{.*}} {axis = 1 : i64, dlc.device = #dlc.device<cpu:1>} : tensor<2x6xf32> -> tensor<2x2xf32>, tensor<2x4xf32>
func.func @feature_split(%w: tensor<2xf32>, %x: tensor<4x6xf32> {dlc.batch}) -> (tensor<4x2xf32>, tensor<4x4xf32>) {
  %a, %b = dlc.split %x {axis = 1 : i64} : tensor<4x6xf32> -> tensor<4x2xf32>, tensor<4x4xf32>
  %y = dlc.mul %a, %w : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  return %y, %b : tensor<4x2xf32>, tensor<4x4xf32>
}

// -----

// A reshape that merges the batch axis with the next (a language model's labels
// flattened for its loss) gives each replica its samples' rows.
// CHECK-LABEL: func.func @merged_batch
// CHECK: dlc.reshape %{{.*}} {dlc.device = #dlc.device<cpu:0>} : tensor<2x3xi64> to tensor<6xi64>
// CHECK: dlc.reshape %{{.*}} {dlc.device = #dlc.device<cpu:1>} : tensor<2x3xi64> to tensor<6xi64>
func.func @merged_batch(%x: tensor<4x3xi64> {dlc.batch}) -> tensor<12xi64> {
  %y = dlc.reshape %x : tensor<4x3xi64> to tensor<12xi64>
  return %y : tensor<12xi64>
}

// -----

// A shared row broadcast along the batch to sit beside each sample (ViT's [CLS] token)
// is broadcast to a replica's part; a broadcast that only meets shared values keeps
// the whole batch's size.
// CHECK-LABEL: func.func @row_per_sample
// CHECK: dlc.broadcast_to %{{.*}} {dlc.device = #dlc.device<cpu:0>} : tensor<1x1x3xf32> to tensor<2x1x3xf32>
// CHECK: dlc.broadcast_to %{{.*}} {dlc.device = #dlc.device<cpu:1>} : tensor<1x1x3xf32> to tensor<2x1x3xf32>
// CHECK: dlc.concat %{{.*}}, %{{.*}} {axis = 1 : i64, dlc.device = #dlc.device<cpu:0>} : (tensor<2x1x3xf32>, tensor<2x2x3xf32>) -> tensor<2x3x3xf32>
// CHECK: dlc.broadcast_to %{{.*}} {dlc.device = #dlc.device<cpu:0>} : tensor<1x3xf32> to tensor<4x3xf32>
func.func @row_per_sample(%cls: tensor<1x1x3xf32>, %w: tensor<1x3xf32>, %x: tensor<4x2x3xf32> {dlc.batch}) -> (tensor<4x3x3xf32>, tensor<4x3xf32>) {
  %row = dlc.broadcast_to %cls : tensor<1x1x3xf32> to tensor<4x1x3xf32>
  %y = dlc.concat %row, %x {axis = 1 : i64} : (tensor<4x1x3xf32>, tensor<4x2x3xf32>) -> tensor<4x3x3xf32>
  %shared = dlc.broadcast_to %w : tensor<1x3xf32> to tensor<4x3xf32>
  return %y, %shared : tensor<4x3x3xf32>, tensor<4x3xf32>
}

// -----

// A slice that keeps every sample (the first token of each) keeps a replica's part
// whole, and so does its gradient.
// CHECK-LABEL: func.func @first_token
// CHECK: dlc.slice %{{.*}} {begin = array<i64: 0, 0>, dlc.device = #dlc.device<cpu:0>, end = array<i64: 2, 1>, step = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK: dlc.slice_backward %{{.*}} {begin = array<i64: 0, 0>, dlc.device = #dlc.device<cpu:0>, end = array<i64: 2, 1>, shape = array<i64: 2, 3>, step = array<i64: 1, 1>} : (tensor<2x1xf32>) -> tensor<2x3xf32>
func.func @first_token(%x: tensor<4x3xf32> {dlc.batch}) -> tensor<4x3xf32> {
  %first = dlc.slice %x {begin = array<i64: 0, 0>, end = array<i64: 4, 1>, step = array<i64: 1, 1>} : (tensor<4x3xf32>) -> tensor<4x1xf32>
  %back = dlc.slice_backward %first {begin = array<i64: 0, 0>, end = array<i64: 4, 1>, step = array<i64: 1, 1>, shape = array<i64: 4, 3>} : (tensor<4x1xf32>) -> tensor<4x3xf32>
  return %back : tensor<4x3xf32>
}

// -----

// Functions without dlc.batch arguments are left alone.
// CHECK-LABEL: func.func @untouched(%arg0: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: dlc.relu %arg0 : tensor<4xf32>
func.func @untouched(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = dlc.relu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Gradients are bucketed: both (16 and 12 bytes) wait until an op needs one, then each
// replica flattens and concatenates them, one all-reduce sums the bucket, and each
// replica cuts it back. With bucket-bytes=0 every gradient has its own all-reduce.
// CHECK-LABEL: func.func @two_gradients
// CHECK: %[[A0:.*]] = dlc.reshape %{{.*}} {dlc.device = #dlc.device<cpu:0>} : tensor<4xf32> to tensor<4xf32>
// CHECK: %[[B0:.*]] = dlc.reshape %{{.*}} {dlc.device = #dlc.device<cpu:0>} : tensor<3xf32> to tensor<3xf32>
// CHECK: %[[F0:.*]] = dlc.concat %[[A0]], %[[B0]] {{.*}} -> tensor<7xf32>
// CHECK: %[[F1:.*]] = dlc.concat {{.*}} -> tensor<7xf32>
// CHECK: %[[S:.*]]:2 = dlc.all_reduce sum %[[F0]], %[[F1]]
// CHECK: dlc.split %[[S]]#0 {{.*}} : tensor<7xf32> -> tensor<4xf32>, tensor<3xf32>
// CHECK: dlc.split %[[S]]#1 {{.*}} : tensor<7xf32> -> tensor<4xf32>, tensor<3xf32>
// CHECK-NOT: dlc.all_reduce
// CHECK: return
// SINGLE-LABEL: func.func @two_gradients(
// SINGLE-COUNT-2: dlc.all_reduce sum
// SINGLE-NOT: dlc.concat
func.func @two_gradients(%w: tensor<4xf32>, %v: tensor<3xf32>, %x: tensor<6x4xf32> {dlc.batch},
                         %y: tensor<6x3xf32> {dlc.batch})
    -> (tensor<4xf32> {dlc.updates = 0 : i64}, tensor<3xf32> {dlc.updates = 1 : i64}) {
  %gw = dlc.reduce sum %x {axes = array<i64: 0>, dlc.gradient} : (tensor<6x4xf32>) -> tensor<4xf32>
  %gv = dlc.reduce sum %y {axes = array<i64: 0>, dlc.gradient} : (tensor<6x3xf32>) -> tensor<3xf32>
  %nw = dlc.sub %w, %gw : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %nv = dlc.sub %v, %gv : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %nw, %nv : tensor<4xf32>, tensor<3xf32>
}
