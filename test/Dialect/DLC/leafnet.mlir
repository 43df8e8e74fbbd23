// The seed's LeafNetwork, forward pass in training mode, written by hand in the dlc
// dialect: 3 x [conv k2 -> relu -> max_pool(4, stride 2) -> batch_norm], flatten,
// dense 100 relu dropout 0.2, dense 10 relu dropout 0.2, dense 2. Every result type is
// checked against the dialect's shape inference when the module verifies.
// RUN: dlc-opt %s | dlc-opt | FileCheck %s
// RUN: dlc-opt %s --emit-bytecode | dlc-opt | FileCheck %s

// CHECK-LABEL: func.func @leaf_network
func.func @leaf_network(
    %x: tensor<4x3x128x128xf32> {dlc.device = #dlc.device<cpu:0>},
    %conv1_weight: tensor<32x3x2x2xf32> {dlc.device = #dlc.device<cpu:0>},
    %conv1_bias: tensor<32xf32> {dlc.device = #dlc.device<cpu:0>},
    %bn1_gamma: tensor<32xf32> {dlc.device = #dlc.device<cpu:0>},
    %bn1_beta: tensor<32xf32> {dlc.device = #dlc.device<cpu:0>},
    %bn1_running_mean: tensor<32xf32> {dlc.device = #dlc.device<cpu:0>},
    %bn1_running_var: tensor<32xf32> {dlc.device = #dlc.device<cpu:0>},
    %conv2_weight: tensor<64x32x2x2xf32> {dlc.device = #dlc.device<cpu:0>},
    %conv2_bias: tensor<64xf32> {dlc.device = #dlc.device<cpu:0>},
    %bn2_gamma: tensor<64xf32> {dlc.device = #dlc.device<cpu:0>},
    %bn2_beta: tensor<64xf32> {dlc.device = #dlc.device<cpu:0>},
    %bn2_running_mean: tensor<64xf32> {dlc.device = #dlc.device<cpu:0>},
    %bn2_running_var: tensor<64xf32> {dlc.device = #dlc.device<cpu:0>},
    %conv3_weight: tensor<128x64x2x2xf32> {dlc.device = #dlc.device<cpu:0>},
    %conv3_bias: tensor<128xf32> {dlc.device = #dlc.device<cpu:0>},
    %bn3_gamma: tensor<128xf32> {dlc.device = #dlc.device<cpu:0>},
    %bn3_beta: tensor<128xf32> {dlc.device = #dlc.device<cpu:0>},
    %bn3_running_mean: tensor<128xf32> {dlc.device = #dlc.device<cpu:0>},
    %bn3_running_var: tensor<128xf32> {dlc.device = #dlc.device<cpu:0>},
    %dense1_weight: tensor<100x21632xf32> {dlc.device = #dlc.device<cpu:0>},
    %dense1_bias: tensor<100xf32> {dlc.device = #dlc.device<cpu:0>},
    %dense2_weight: tensor<10x100xf32> {dlc.device = #dlc.device<cpu:0>},
    %dense2_bias: tensor<10xf32> {dlc.device = #dlc.device<cpu:0>},
    %dense3_weight: tensor<2x10xf32> {dlc.device = #dlc.device<cpu:0>},
    %dense3_bias: tensor<2xf32> {dlc.device = #dlc.device<cpu:0>})
    -> tensor<4x2xf32> {
  // conv_block(32)
  // CHECK: dlc.conv2d {{.*}} -> tensor<4x32x127x127xf32>
  %conv1 = dlc.conv2d %x, %conv1_weight, %conv1_bias : (tensor<4x3x128x128xf32>, tensor<32x3x2x2xf32>, tensor<32xf32>) -> tensor<4x32x127x127xf32>
  // CHECK: dlc.relu {{.*}} : tensor<4x32x127x127xf32>
  %relu1 = dlc.relu %conv1 : tensor<4x32x127x127xf32>
  // CHECK: dlc.max_pool2d {{.*}} -> tensor<4x32x62x62xf32>
  %pool1 = dlc.max_pool2d %relu1 {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<4x32x127x127xf32>) -> tensor<4x32x62x62xf32>
  // CHECK: dlc.batch_norm {{.*}} -> (tensor<4x32x62x62xf32>, tensor<32xf32>, tensor<32xf32>)
  %bn1, %bn1_mean, %bn1_var = dlc.batch_norm %pool1, %bn1_gamma, %bn1_beta, %bn1_running_mean, %bn1_running_var {training} : (tensor<4x32x62x62xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<4x32x62x62xf32>, tensor<32xf32>, tensor<32xf32>)
  // conv_block(64)
  // CHECK: dlc.conv2d {{.*}} -> tensor<4x64x61x61xf32>
  %conv2 = dlc.conv2d %bn1, %conv2_weight, %conv2_bias : (tensor<4x32x62x62xf32>, tensor<64x32x2x2xf32>, tensor<64xf32>) -> tensor<4x64x61x61xf32>
  // CHECK: dlc.relu {{.*}} : tensor<4x64x61x61xf32>
  %relu2 = dlc.relu %conv2 : tensor<4x64x61x61xf32>
  // CHECK: dlc.max_pool2d {{.*}} -> tensor<4x64x29x29xf32>
  %pool2 = dlc.max_pool2d %relu2 {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<4x64x61x61xf32>) -> tensor<4x64x29x29xf32>
  // CHECK: dlc.batch_norm {{.*}} -> (tensor<4x64x29x29xf32>, tensor<64xf32>, tensor<64xf32>)
  %bn2, %bn2_mean, %bn2_var = dlc.batch_norm %pool2, %bn2_gamma, %bn2_beta, %bn2_running_mean, %bn2_running_var {training} : (tensor<4x64x29x29xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<4x64x29x29xf32>, tensor<64xf32>, tensor<64xf32>)
  // conv_block(128)
  // CHECK: dlc.conv2d {{.*}} -> tensor<4x128x28x28xf32>
  %conv3 = dlc.conv2d %bn2, %conv3_weight, %conv3_bias : (tensor<4x64x29x29xf32>, tensor<128x64x2x2xf32>, tensor<128xf32>) -> tensor<4x128x28x28xf32>
  // CHECK: dlc.relu {{.*}} : tensor<4x128x28x28xf32>
  %relu3 = dlc.relu %conv3 : tensor<4x128x28x28xf32>
  // CHECK: dlc.max_pool2d {{.*}} -> tensor<4x128x13x13xf32>
  %pool3 = dlc.max_pool2d %relu3 {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<4x128x28x28xf32>) -> tensor<4x128x13x13xf32>
  // CHECK: dlc.batch_norm {{.*}} -> (tensor<4x128x13x13xf32>, tensor<128xf32>, tensor<128xf32>)
  %bn3, %bn3_mean, %bn3_var = dlc.batch_norm %pool3, %bn3_gamma, %bn3_beta, %bn3_running_mean, %bn3_running_var {training} : (tensor<4x128x13x13xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> (tensor<4x128x13x13xf32>, tensor<128xf32>, tensor<128xf32>)
  // CHECK: dlc.flatten {{.*}} -> tensor<4x21632xf32>
  %flat = dlc.flatten %bn3 : (tensor<4x128x13x13xf32>) -> tensor<4x21632xf32>
  // dense_block(100)
  // CHECK: dlc.dense {{.*}} -> tensor<4x100xf32>
  %dense1 = dlc.dense %flat, %dense1_weight, %dense1_bias : (tensor<4x21632xf32>, tensor<100x21632xf32>, tensor<100xf32>) -> tensor<4x100xf32>
  %act1 = dlc.relu %dense1 : tensor<4x100xf32>
  // CHECK: dlc.dropout {{.*}} -> (tensor<4x100xf32>, tensor<4x100xi1>)
  %drop1, %mask1 = dlc.dropout %act1 {ratio = 2.000000e-01 : f64, seed = 1 : i64} : (tensor<4x100xf32>) -> (tensor<4x100xf32>, tensor<4x100xi1>)
  // dense_block(10)
  // CHECK: dlc.dense {{.*}} -> tensor<4x10xf32>
  %dense2 = dlc.dense %drop1, %dense2_weight, %dense2_bias : (tensor<4x100xf32>, tensor<10x100xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  %act2 = dlc.relu %dense2 : tensor<4x10xf32>
  // CHECK: dlc.dropout {{.*}} -> (tensor<4x10xf32>, tensor<4x10xi1>)
  %drop2, %mask2 = dlc.dropout %act2 {ratio = 2.000000e-01 : f64, seed = 2 : i64} : (tensor<4x10xf32>) -> (tensor<4x10xf32>, tensor<4x10xi1>)
  // The last op: Dense(2).
  // CHECK: %[[OUT:.*]] = dlc.dense {{.*}} : (tensor<4x10xf32>, tensor<2x10xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  // CHECK-NEXT: return %[[OUT]] : tensor<4x2xf32>
  %logits = dlc.dense %drop2, %dense3_weight, %dense3_bias : (tensor<4x10xf32>, tensor<2x10xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  return %logits : tensor<4x2xf32>
}
