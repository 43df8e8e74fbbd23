// Shapes of modules and functions that are valid IR but not what hybridize() traces:
// every dlc pass must skip them or refuse them with a diagnostic, never crash
// (every-pass-on-every-input.test runs each pass over each chunk).

// An empty module.
module {
}

// -----

// A declaration alone.
func.func private @declared(tensor<4xf32>) -> tensor<4xf32>

// -----

// A declaration beside a body that uses dlc ops.
func.func private @external(tensor<4xf32>) -> tensor<4xf32>
func.func @body(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dlc.relu %x : tensor<4xf32>
  %1 = dlc.exp %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Two blocks, no dlc op (so no pass has loaded the dlc dialect yet).
func.func @two_blocks(%x: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^next
^next:
  return %x : tensor<4xf32>
}

// -----

// Two blocks with dlc ops, a batch argument and a device.
func.func @branchy(%x: tensor<4x2xf32> {dlc.batch, dlc.device = #dlc.device<cpu:0>}, %c: i1) -> tensor<4x2xf32> {
  %0 = dlc.relu %x : tensor<4x2xf32>
  cf.cond_br %c, ^a, ^b
^a:
  %1 = dlc.exp %0 : tensor<4x2xf32>
  return %1 : tensor<4x2xf32>
^b:
  %2 = dlc.relu %0 : tensor<4x2xf32>
  return %2 : tensor<4x2xf32>
}

// -----

// A function with no arguments, no results and no ops.
func.func @nothing() {
  return
}

// -----

// A nested module holding a function: passes on the outer module's functions leave it.
module {
  module @inner {
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = dlc.relu %x : tensor<4xf32>
      return %0 : tensor<4xf32>
    }
  }
}
