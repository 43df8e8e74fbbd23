// One data-parallel SGD step of a small MLP (784 -> 32 relu -> 10) on two CPU devices,
// as `split_and_load` + `autograd.record()` + `backward()` + `trainer.step()` do it in
// the seed: the batch is split, each device runs forward and backward on its half with
// its own copy of the parameters, the gradients are summed with dlc.all_reduce, and
// every copy takes the same update. Run it with
//   build/bin/dlc-opt examples/mlir/data_parallel_step.mlir --canonicalize --cse

func.func @train_step(
    %images: tensor<8x784xf32> {dlc.device = #dlc.device<cpu:0>},
    %labels: tensor<8xi32> {dlc.device = #dlc.device<cpu:0>},
    %w1_0: tensor<32x784xf32> {dlc.device = #dlc.device<cpu:0>},
    %b1_0: tensor<32xf32> {dlc.device = #dlc.device<cpu:0>},
    %w2_0: tensor<10x32xf32> {dlc.device = #dlc.device<cpu:0>},
    %b2_0: tensor<10xf32> {dlc.device = #dlc.device<cpu:0>},
    %w1_1: tensor<32x784xf32> {dlc.device = #dlc.device<cpu:1>},
    %b1_1: tensor<32xf32> {dlc.device = #dlc.device<cpu:1>},
    %w2_1: tensor<10x32xf32> {dlc.device = #dlc.device<cpu:1>},
    %b2_1: tensor<10xf32> {dlc.device = #dlc.device<cpu:1>})
    -> (tensor<32x784xf32>, tensor<32xf32>, tensor<10x32xf32>, tensor<10xf32>, tensor<32x784xf32>, tensor<32xf32>, tensor<10x32xf32>, tensor<10xf32>, tensor<f32>) {
  // split_and_load: half of the batch stays on cpu(0), the other half moves to cpu(1).
  %x_0, %x_1_src = dlc.split %images : tensor<8x784xf32> -> tensor<4x784xf32>, tensor<4x784xf32>
  %y_0, %y_1_src = dlc.split %labels : tensor<8xi32> -> tensor<4xi32>, tensor<4xi32>
  %x_1 = dlc.copy %x_1_src : tensor<4x784xf32> to #dlc.device<cpu:1>
  %y_1 = dlc.copy %y_1_src : tensor<4xi32> to #dlc.device<cpu:1>

  // Forward on cpu(0).
  %h_0 = dlc.dense %x_0, %w1_0, %b1_0 : (tensor<4x784xf32>, tensor<32x784xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %a_0 = dlc.relu %h_0 : tensor<4x32xf32>
  %logits_0 = dlc.dense %a_0, %w2_0, %b2_0 : (tensor<4x32xf32>, tensor<10x32xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  %loss_0 = dlc.softmax_cross_entropy %logits_0, %y_0 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<4xf32>
  // Backward: loss.backward() seeds each sample with 1.
  %ones_0 = dlc.constant dense<1.0> : tensor<4xf32>
  %zero_0 = dlc.constant dense<0.0> : tensor<1xf32>
  %dlogits_0 = dlc.softmax_cross_entropy_backward %ones_0, %logits_0, %y_0 : (tensor<4xf32>, tensor<4x10xf32>, tensor<4xi32>) -> tensor<4x10xf32>
  %dw2_0 = dlc.matmul %dlogits_0, %a_0 {transpose_a} : (tensor<4x10xf32>, tensor<4x32xf32>) -> tensor<10x32xf32>
  %db2_0 = dlc.reduce sum %dlogits_0 {axes = array<i64: 0>} : (tensor<4x10xf32>) -> tensor<10xf32>
  %da_0 = dlc.matmul %dlogits_0, %w2_0 : (tensor<4x10xf32>, tensor<10x32xf32>) -> tensor<4x32xf32>
  %active_0 = dlc.compare gt, %h_0, %zero_0 : (tensor<4x32xf32>, tensor<1xf32>) -> tensor<4x32xi1>
  %dh_0 = dlc.select %active_0, %da_0, %zero_0 : (tensor<4x32xi1>, tensor<4x32xf32>, tensor<1xf32>) -> tensor<4x32xf32>
  %dw1_0 = dlc.matmul %dh_0, %x_0 {transpose_a} : (tensor<4x32xf32>, tensor<4x784xf32>) -> tensor<32x784xf32>
  %db1_0 = dlc.reduce sum %dh_0 {axes = array<i64: 0>} : (tensor<4x32xf32>) -> tensor<32xf32>

  // Forward on cpu(1).
  %h_1 = dlc.dense %x_1, %w1_1, %b1_1 : (tensor<4x784xf32>, tensor<32x784xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %a_1 = dlc.relu %h_1 : tensor<4x32xf32>
  %logits_1 = dlc.dense %a_1, %w2_1, %b2_1 : (tensor<4x32xf32>, tensor<10x32xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  %loss_1 = dlc.softmax_cross_entropy %logits_1, %y_1 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<4xf32>
  // Backward: loss.backward() seeds each sample with 1.
  %ones_1 = dlc.constant dense<1.0> : tensor<4xf32>
  %zero_1 = dlc.constant dense<0.0> : tensor<1xf32>
  %dlogits_1 = dlc.softmax_cross_entropy_backward %ones_1, %logits_1, %y_1 : (tensor<4xf32>, tensor<4x10xf32>, tensor<4xi32>) -> tensor<4x10xf32>
  %dw2_1 = dlc.matmul %dlogits_1, %a_1 {transpose_a} : (tensor<4x10xf32>, tensor<4x32xf32>) -> tensor<10x32xf32>
  %db2_1 = dlc.reduce sum %dlogits_1 {axes = array<i64: 0>} : (tensor<4x10xf32>) -> tensor<10xf32>
  %da_1 = dlc.matmul %dlogits_1, %w2_1 : (tensor<4x10xf32>, tensor<10x32xf32>) -> tensor<4x32xf32>
  %active_1 = dlc.compare gt, %h_1, %zero_1 : (tensor<4x32xf32>, tensor<1xf32>) -> tensor<4x32xi1>
  %dh_1 = dlc.select %active_1, %da_1, %zero_1 : (tensor<4x32xi1>, tensor<4x32xf32>, tensor<1xf32>) -> tensor<4x32xf32>
  %dw1_1 = dlc.matmul %dh_1, %x_1 {transpose_a} : (tensor<4x32xf32>, tensor<4x784xf32>) -> tensor<32x784xf32>
  %db1_1 = dlc.reduce sum %dh_1 {axes = array<i64: 0>} : (tensor<4x32xf32>) -> tensor<32xf32>

  // trainer.step(batch_size): sum each gradient over the devices (KVStore "device").
  %gw1_0, %gw1_1 = dlc.all_reduce sum %dw1_0, %dw1_1 {devices = [#dlc.device<cpu:0>, #dlc.device<cpu:1>]} : tensor<32x784xf32>, tensor<32x784xf32>
  %gb1_0, %gb1_1 = dlc.all_reduce sum %db1_0, %db1_1 {devices = [#dlc.device<cpu:0>, #dlc.device<cpu:1>]} : tensor<32xf32>, tensor<32xf32>
  %gw2_0, %gw2_1 = dlc.all_reduce sum %dw2_0, %dw2_1 {devices = [#dlc.device<cpu:0>, #dlc.device<cpu:1>]} : tensor<10x32xf32>, tensor<10x32xf32>
  %gb2_0, %gb2_1 = dlc.all_reduce sum %db2_0, %db2_1 {devices = [#dlc.device<cpu:0>, #dlc.device<cpu:1>]} : tensor<10xf32>, tensor<10xf32>

  // SGD with learning_rate 0.1 over the batch of 8: w -= (0.1 / 8) * grad, on every copy.
  %rate_0 = dlc.constant dense<1.250000e-02> : tensor<1xf32>
  %step_w1_0 = dlc.mul %gw1_0, %rate_0 : (tensor<32x784xf32>, tensor<1xf32>) -> tensor<32x784xf32>
  %new_w1_0 = dlc.sub %w1_0, %step_w1_0 : (tensor<32x784xf32>, tensor<32x784xf32>) -> tensor<32x784xf32>
  %step_b1_0 = dlc.mul %gb1_0, %rate_0 : (tensor<32xf32>, tensor<1xf32>) -> tensor<32xf32>
  %new_b1_0 = dlc.sub %b1_0, %step_b1_0 : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %step_w2_0 = dlc.mul %gw2_0, %rate_0 : (tensor<10x32xf32>, tensor<1xf32>) -> tensor<10x32xf32>
  %new_w2_0 = dlc.sub %w2_0, %step_w2_0 : (tensor<10x32xf32>, tensor<10x32xf32>) -> tensor<10x32xf32>
  %step_b2_0 = dlc.mul %gb2_0, %rate_0 : (tensor<10xf32>, tensor<1xf32>) -> tensor<10xf32>
  %new_b2_0 = dlc.sub %b2_0, %step_b2_0 : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
  %rate_1 = dlc.constant dense<1.250000e-02> : tensor<1xf32>
  %step_w1_1 = dlc.mul %gw1_1, %rate_1 : (tensor<32x784xf32>, tensor<1xf32>) -> tensor<32x784xf32>
  %new_w1_1 = dlc.sub %w1_1, %step_w1_1 : (tensor<32x784xf32>, tensor<32x784xf32>) -> tensor<32x784xf32>
  %step_b1_1 = dlc.mul %gb1_1, %rate_1 : (tensor<32xf32>, tensor<1xf32>) -> tensor<32xf32>
  %new_b1_1 = dlc.sub %b1_1, %step_b1_1 : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %step_w2_1 = dlc.mul %gw2_1, %rate_1 : (tensor<10x32xf32>, tensor<1xf32>) -> tensor<10x32xf32>
  %new_w2_1 = dlc.sub %w2_1, %step_w2_1 : (tensor<10x32xf32>, tensor<10x32xf32>) -> tensor<10x32xf32>
  %step_b2_1 = dlc.mul %gb2_1, %rate_1 : (tensor<10xf32>, tensor<1xf32>) -> tensor<10xf32>
  %new_b2_1 = dlc.sub %b2_1, %step_b2_1 : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>

  // The reported loss: the mean over the whole batch, gathered on cpu(0).
  %loss_1_home = dlc.copy %loss_1 : tensor<4xf32> to #dlc.device<cpu:0>
  %all_losses = dlc.concat %loss_0, %loss_1_home : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %mean_loss = dlc.reduce mean %all_losses {axes = array<i64: 0>} : (tensor<8xf32>) -> tensor<f32>
  return %new_w1_0, %new_b1_0, %new_w2_0, %new_b2_0, %new_w1_1, %new_b1_1, %new_w2_1, %new_b2_1, %mean_loss : tensor<32x784xf32>, tensor<32xf32>, tensor<10x32xf32>, tensor<10xf32>, tensor<32x784xf32>, tensor<32xf32>, tensor<10x32xf32>, tensor<10xf32>, tensor<f32>
}
