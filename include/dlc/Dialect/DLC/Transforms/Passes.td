//===- Passes.td - dlc dialect passes ------------------------*- tablegen -*-===//
#ifndef DLC_DIALECT_DLC_TRANSFORMS_PASSES_TD
#define DLC_DIALECT_DLC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DLCPlaceDevices : Pass<"dlc-place-devices", "mlir::func::FuncOp"> {
  let summary = "Give every op a device, inserting the copies that requests and fallbacks need";
  let description = [{
    Every op gets a `dlc.device`: the device it was asked to run on (`dlc.place`, which
    the pass consumes), else the one it already has, else its first operand's (the
    eager rule: ops run where their inputs live), else `default-device`. Constants stay
    device-free; `dlc.copy` and `dlc.all_reduce` name their own devices.

    Operands living elsewhere than their op's device are copied there with `dlc.copy`
    (one copy per value and device, placed after the value's definition), or, with
    `explicit-only`, reported as errors, as the eager API does. What each device kind
    can run is the module's `dlc.targets` (a `#dlc.target` per kind, which hybridize()
    fills in from the kernel table; without it every kind runs every op), so the result
    does not depend on the kernels linked into the tool. An op that the CPU runs but
    its device kind does not is an error, or with `allow-fallback` runs on `cpu(0)`
    with a remark; its consumers still run where it was meant to, so the data comes
    back.

    ```mlir
    // dlc-opt --dlc-place-devices
    func.func @f(%x: tensor<4xf32> {dlc.device = #dlc.device<cpu:0>}) -> tensor<4xf32> {
      %y = dlc.relu %x {dlc.place = #dlc.device<cpu:1>} : tensor<4xf32>
      return %y : tensor<4xf32>
    }
    // becomes
    //   %c = dlc.copy %x : tensor<4xf32> to #dlc.device<cpu:1>
    //   %y = dlc.relu %c {dlc.device = #dlc.device<cpu:1>} : tensor<4xf32>
    ```
  }];
  let options = [
    Option<"defaultDevice", "default-device", "std::string", /*default=*/"\"cpu:0\"",
           "device of ops with no device input and no request (kind:ordinal)">,
    Option<"explicitOnly", "explicit-only", "bool", /*default=*/"false",
           "report operands on other devices instead of copying them">,
    Option<"allowFallback", "allow-fallback", "bool", /*default=*/"false",
           "run ops without a kernel on their device kind on cpu(0)">,
  ];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCShardDataParallel : Pass<"dlc-shard-data-parallel", "mlir::ModuleOp"> {
  let summary = "Turn a single-device training step into its data-parallel program";
  let description = [{
    For every function with arguments marked `dlc.batch` (the samples: data, labels):
    those arguments are split along `batch-axis` into one part per device of `devices`
    (`dlc.split`, then `dlc.copy` to each device); every other argument (parameters,
    optimizer state) becomes one replica argument per device, same `dlc.name`, placed on
    that device. The body is cloned once per device, op by op, with `dlc.device` set.
    The value of every op marked `dlc.gradient` is summed over the replicas with
    `dlc.all_reduce`, and each replica continues with the sum: the optimizer updates are
    identical everywhere. Gradients are bucketed: once the waiting ones hold
    `bucket-bytes`, each replica concatenates them (flattened) and one all-reduce sums the
    bucket, right after the last replica computed its last gradient (so the sums can
    overlap the rest of the backward); a bucket is also summed as soon as an op needs one
    of its gradients, and a gradient of `bucket-bytes` or more is summed alone (no copy). Results: `dlc.updates = k`
    becomes one update per replica of argument `k`; per-sample results (with the batch
    axis) are concatenated on the first device; others come from the first replica.
    BatchNorm statistics are computed per device, as MXNet does; with `sync-batch-norm`
    every replica normalizes with the whole batch's mean and variance (all-reduced from the
    replicas' means and second moments) and its `batch_norm_backward` input gradient uses
    the whole batch's sums, so the step computes what one device with the whole batch
    would.

    A batch that does not divide by the number of devices is an error naming both.

    With `processes=N` the step is one process's part of a job of N processes (launched
    by mpirun), each running it on its own `devices` with its own share of the samples:
    every all-reduce spans the processes (`processes = N` on `dlc.all_reduce`), and the
    whole-batch sums of `sync-batch-norm` count all of them. One device per process is
    then allowed, and its samples are not split.

    ```mlir
    // dlc-opt --dlc-shard-data-parallel="devices=cpu:0,cpu:1"
    func.func @step(%w: tensor<2x4xf32> {dlc.name = "w"}, %x: tensor<8x4xf32> {dlc.batch})
        -> (tensor<2x4xf32> {dlc.updates = 0 : i64}) { ... }
    // becomes @step(%w0 on cpu:0, %w1 on cpu:1, %x) -> (w0', w1') with
    //   %p:2 = dlc.split %x ... ; per-device ops ; dlc.all_reduce sum %g0, %g1 ...
    ```
  }];
  let options = [
    ListOption<"devices", "devices", "std::string",
               "the devices, kind:ordinal, comma-separated (cpu:0,cpu:1 or gpu:0,gpu:1)">,
    Option<"batchAxis", "batch-axis", "int64_t", /*default=*/"0",
           "the axis of the dlc.batch arguments that holds the samples">,
    Option<"syncBatchNorm", "sync-batch-norm", "bool", /*default=*/"false",
           "normalize training BatchNorm with the whole batch's statistics (all-reduced "
           "means of the replicas' means and second moments), and its input gradient "
           "with the whole batch's sums">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"1048576",
           "sum gradients in buckets of at least this many bytes (0: one all-reduce each)">,
    Option<"processes", "processes", "int64_t", /*default=*/"1",
           "the processes of the job this step is one part of: the all-reduces span them">,
  ];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCKeepPoolIndices : Pass<"dlc-keep-pool-indices", "mlir::ModuleOp"> {
  let summary = "Let max pooling's gradient read where the forward found each maximum";
  let description = [{
    A `dlc.max_pool2d_backward %dy, %x` finds each window's maximum again in `%x`, the
    pooling's input, which the forward must keep for it. Where its pooling
    `dlc.max_pool2d %x` (same window attributes) runs on a host device whose target has
    the indexed kernels, the pooling becomes `dlc.max_pool2d_indexed`, which also
    returns a byte per output naming the tap of the window's maximum, and the gradient
    becomes `dlc.max_pool2d_backward_indexed %dy, %indices`, which reads those bytes and
    dy only. A `max_pool2d_backward_relu` region (dlc-fuse's fold of the ReLU's
    gradient) becomes the indexed gradient with `relu`: the byte says whether the
    maximum was > 0. On the LeafNetwork's first pooling at batch 32 the backward went
    from 7.2 to 3.7 ms and the forward from 3.3 to 3.9.

    The pooling and its gradient meet in one function (a training step), or in two: the
    gradient's input is then an argument `dlc.saved_from = [@forward, N]` and result N
    of @forward the pooling's input; the indices become a new result of @forward (after
    the others, before those with `dlc.updates`) and a new last argument of the
    gradient's function, saved from that result, marked `dlc.saved`. Nothing is
    removed or reordered: the pooling's input, no longer read by the gradient, stays an
    argument, for dlc-drop-unread-saved to remove.

    ```mlir
    // dlc-opt --dlc-keep-pool-indices
    func.func @step(%x: tensor<2x16x8x8xf32>, %dy: tensor<2x16x4x4xf32>) -> (tensor<2x16x4x4xf32>, tensor<2x16x8x8xf32>) {
      %y = dlc.max_pool2d %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<2x16x8x8xf32>) -> tensor<2x16x4x4xf32>
      %dx = dlc.max_pool2d_backward %dy, %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>} : (tensor<2x16x4x4xf32>, tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32>
      return %y, %dx : tensor<2x16x4x4xf32>, tensor<2x16x8x8xf32>
    }
    // becomes
    //   %y, %indices = dlc.max_pool2d_indexed %x {...} : (tensor<2x16x8x8xf32>) -> (tensor<2x16x4x4xf32>, tensor<2x16x4x4xui8>)
    //   %dx = dlc.max_pool2d_backward_indexed %dy, %indices {...} : (tensor<2x16x4x4xf32>, tensor<2x16x4x4xui8>) -> tensor<2x16x8x8xf32>
    ```
  }];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCFuseNormActivation : Pass<"dlc-fuse-norm-activation", "mlir::ModuleOp"> {
  let summary = "Fold a training batch norm and the ReLU or ReLU6 after it into one step each way";
  let description = [{
    A training `dlc.batch_norm` whose output only a `dlc.relu` or `dlc.relu6` reads
    becomes a `batch_norm_activation` region yielding the activation, the batch mean
    and the variance; so does one whose output only a `dlc.add` reads that only the
    activation reads (ResNet's shortcut), the add's other operand (of the same type,
    defined before the norm) a fourth region operand; a `dlc.relu_backward` or `dlc.relu6_backward` read by a
    `dlc.batch_norm_backward` as its output gradient becomes with the first such one a
    `batch_norm_activation_backward` region with the activation's two operands first;
    where others read the activation's gradient too (the shortcut's gradient), the
    region yields it as a fourth result and takes the activation gradient's place, so
    the norm gradient's other operands must come before it.
    On CPUs each runs as the batch norm's kernel with the activation folded in
    (`docs/design/runtime.md`); elsewhere op by op.

    A ReLU's gradient reads the ReLU's input, the norm's output, which the forward
    would otherwise keep for it. Since that input is > 0 exactly where the ReLU's output
    is, each `dlc.relu_backward %dz, %y` whose `%y` is a training norm's output (or the
    add of one and a residual) that a `dlc.relu` reads first takes the ReLU's output
    instead: in one function directly,
    across two (`%y` an argument with `dlc.saved_from = [@forward, N]`) through the
    ReLU's output, returned by @forward (marked `dlc.saved`, before the results with
    `dlc.updates`) and taken as a new last argument saved from it. The argument no
    longer read stays for dlc-drop-unread-saved; the pipeline runs this pass again after
    it, when the norm's output has only the ReLU left to read it.

    ```mlir
    // dlc-opt --dlc-fuse-norm-activation
    %n:3 = dlc.batch_norm %x, %g, %b {training} : (...) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>)
    %r = dlc.relu6 %n#0 : tensor<2x16x6x6xf32>
    // becomes
    %f:3 = dlc.fused "batch_norm_activation"(%x, %g, %b) : (...) -> (tensor<2x16x6x6xf32>, tensor<16xf32>, tensor<16xf32>) {
    ^bb0(%a: ..., %ga: ..., %ba: ...):
      %m:3 = dlc.batch_norm %a, %ga, %ba {training} : ...
      %s = dlc.relu6 %m#0 : tensor<2x16x6x6xf32>
      dlc.yield %s, %m#1, %m#2 : ...
    }
    ```
  }];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCReportFusion : Pass<"dlc-report-fusion", "mlir::ModuleOp"> {
  let summary = "Say what each fused region holds and why its neighbours stayed apart";
  let description = [{
    Changes nothing. For every `dlc.fused` region it emits a remark naming the region's
    kind, the ops it holds and how it runs on its device (one library kernel, one
    element-wise step, or op by op), then one remark per neighbour outside any region
    (the producer of an operand, the reader of a result; views, constants and returns
    left out) saying why that neighbour was not fused: the value between them has other
    readers, or no pass folds that op into a region of that kind. Each remark is at the region's location (the traced
    op names). Run it after the pipeline's fusion passes:

    ```
    dlc-opt step.mlir --dlc-pipeline=cpu --dlc-report-fusion -o /dev/null
    remark: fused "batch_norm_activation" (dlc.batch_norm + dlc.relu) runs as one batch norm kernel with the activation
    remark: not with the producer dlc.conv2d: its result has 2 readers, which would all need it from the region
    ```
  }];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCDropUnreadSaved : Pass<"dlc-drop-unread-saved", "mlir::ModuleOp"> {
  let summary = "Stop returning activations for a backward that no longer reads them";
  let description = [{
    A forward returns, besides its outputs, the values its backward reads: results
    marked `dlc.saved`, bound to the backward's arguments with
    `dlc.saved_from = [@forward, N]`. Passes can leave such an argument unread (after
    dlc-keep-pool-indices a pooling's gradient reads the indices, no longer the
    pooling's input, a block's largest activation). This pass removes every
    `dlc.saved_from` argument nothing reads, then every `dlc.saved` result no remaining
    argument is saved from, and renumbers the other `dlc.saved_from` (and their
    `saved.N` names) to the results' new numbers. A forward's outputs (results without
    `dlc.saved`) and arguments bound otherwise are never removed, so callers that bind
    those by position keep their bindings, and those that bind saved values read them
    from `dlc.saved_from`. The value is then written only where something in the
    forward reads it, or not at all (dlc-fuse-conv-pool keeps a region's activation in
    per-thread scratch when the region does not return it).

    ```mlir
    // dlc-opt --dlc-drop-unread-saved
    func.func @forward(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32> {dlc.saved}, tensor<8xf32> {dlc.saved}) {
      %r = dlc.relu %x : tensor<8xf32>
      %y = dlc.exp %r : tensor<8xf32>
      return %y, %r, %y : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
    }
    func.func @backward(%dy: tensor<8xf32>, %r: tensor<8xf32> {dlc.saved_from = [@forward, 1]},
                        %y: tensor<8xf32> {dlc.saved_from = [@forward, 2]}) -> tensor<8xf32> {
      %d = dlc.mul %dy, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
      return %d : tensor<8xf32>
    }
    // becomes: @forward returns %y, %y; @backward takes (%dy, %y {dlc.saved_from = [@forward, 1]})
    ```
  }];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCAssignLayouts : Pass<"dlc-assign-layouts", "mlir::ModuleOp"> {
  let summary = "Keep CPU activations in one of oneDNN's blocked layouts where the ops allow it";
  let description = [{
    Walks each function's ops in order, as the runtime will run them, and asks each op
    that runs on a host device for its layout rule (DLC_LayoutRule in its ODS; a
    `dlc.fused` region that runs as one kernel follows its library op's rule, or, for an
    element-wise chain, the element-wise rule over its non-scalar inputs). Where the rule
    wants an operand in the other layout, a `dlc.to_layout` goes in front (one per value
    and layout); each result's layout is recorded in the op's `dlc.layouts`.

    What a view reads (`dlc.reshape`, and the batch split of a sharded step), function
    arguments and written-back values (`dlc.updates`) stay plain, and so do results
    unless the function has `dlc.blocked_results`; when a rule would write such a value
    blocked, the op writes a blocked value and a conversion after it makes the plain one.
    An argument with `dlc.saved_from = [@forward, N]` is bound in the layout @forward
    returns its result N in, recorded as the argument's `dlc.layout`.

    `layout` names the blocked layout: nChw16c (oneDNN's AVX-512 kernels) or nChw8c
    (its AVX2 ones). hybridize() and dlc-compile run the pass with the CPU's layout
    where oneDNN has blocked kernels (unless DLC_BLOCKED_LAYOUTS=0, and not under the
    reference kernels); the lowering reads the layouts and runs the conversions as
    steps.

    ```mlir
    // dlc-opt --dlc-assign-layouts
    func.func @f(%x: tensor<2x16x8x8xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32> {
      %c = dlc.conv2d %x, %w : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x6x6xf32>
      %r = dlc.relu %c : tensor<2x16x6x6xf32>
      return %r : tensor<2x16x6x6xf32>
    }
    // becomes
    //   %c = dlc.conv2d %x, %w {dlc.layouts = [#dlc.layout<nChw16c>]} : ...
    //   %r = dlc.relu %c {dlc.layouts = [#dlc.layout<nChw16c>]} : tensor<2x16x6x6xf32>
    //   %p = dlc.to_layout %r : tensor<2x16x6x6xf32> to #dlc.layout<plain>
    //   return %p : tensor<2x16x6x6xf32>
    ```
  }];
  let options = [
    Option<"layout", "layout", "std::string", /*default=*/"\"nChw16c\"",
           "the blocked layout activations take: nChw16c or nChw8c">,
  ];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCChooseConvAlgorithms : Pass<"dlc-choose-conv-algorithms", "mlir::ModuleOp"> {
  let summary = "Choose, per convolution, how its CPU kernel computes: direct or Winograd";
  let description = [{
    Every `dlc.conv2d`, `dlc.conv2d_backward_data` and `dlc.conv2d_backward_filter` that
    runs on a host device with a 3x3 window, stride 1, no dilation and one group (the
    shapes Winograd's transform exists for) gets `algorithm winograd` or stays `direct`
    (the default, not printed). The choice is recorded in the IR, so model files keep it
    and `dlc-run` does not choose again; where oneDNN has no Winograd kernel for the
    machine it runs on, the runtime computes with dlc's own where it applies (AVX2,
    nChw8c, 64 channels or more) and directly elsewhere.

    `choose=auto` (what hybridize() and dlc-compile run by default) takes Winograd for
    the forward convolutions whose weights their step keeps prepared between runs
    (`dlc.prepared_operands`, from dlc-hoist-parameter-work) in functions that only
    predict (no other function reads their results as saved activations,
    `dlc.saved_from`), where oneDNN's transform of the weights into its inference format
    is paid once: on a 2-core AVX-512 machine that was 1.2-3x faster on every 3x3 layer
    of a ResNet at batch 1 to 32. Every other candidate (training's forward and both
    gradients) takes it when it has at least 32 output tiles of 4x4 (batch x
    ceil(OH/4) x ceil(OW/4)): oneDNN's training kernels transform the weights inside, in
    parallel, and there ran 1.2-2.7x faster than direct, but lost with fewer tiles (512
    channels of 7x7 at batch 4). In a forward recorded for training the candidates'
    weights are no longer kept (the trainer changes them every step; kept, a Winograd
    convolution would run the inference kernel, whose transform costs up to 130 ms per
    call). Either way only convolutions with at least 16 input and output channels (one
    block of oneDNN's Winograd kernels; a 1- or 3-channel image lost 3-6x) and 10
    million multiply-accumulates (a smaller one does not repay Winograd's three phases:
    a Fashion-MNIST network's 7.2 million per image lost at batch 1 and 2, won from 4).
    A rule, not a measurement: every process compiles the same program.
    `choose=timed` times both algorithms of each shape with the very kernels the program
    will call, in the layouts dlc-assign-layouts gave it (with a fused ReLU epilogue and
    kept weights where the step has them), once per shape and process, and takes
    Winograd only when it is at least 10 % faster (it rounds a few ulps more); two
    processes may then choose differently. A tool without the runtime's kernels
    (dlc-opt) has no timer, and `timed` leaves every convolution direct there.
    `choose=winograd` takes Winograd wherever the shape allows (for tests),
    `choose=direct` changes nothing.

    ```mlir
    // dlc-opt --dlc-choose-conv-algorithms=choose=winograd
    %y = dlc.conv2d %x, %w {padding = array<i64: 1, 1>} : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>) -> tensor<1x64x56x56xf32>
    // becomes
    %y = dlc.conv2d %x, %w algorithm winograd {padding = array<i64: 1, 1>} : (...) -> tensor<1x64x56x56xf32>
    ```
  }];
  let options = [
    Option<"choose", "choose", "std::string", /*default=*/"\"auto\"",
           "auto (Winograd for large enough convolutions whose weights stay prepared or whose output has 32 tiles), timed (by measuring this "
           "machine), winograd (wherever the shape allows) or direct">
  ];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCHoistParameterWork : Pass<"dlc-hoist-parameter-work", "mlir::func::FuncOp"> {
  let summary = "Mark the work that reads only parameters and constants: done once, kept between runs";
  let description = [{
    An op whose operands are all parameters (arguments marked `dlc.parameter` that the
    function does not update), constants or results of such ops gets `dlc.prepared`:
    batch-norm folding into convolution weights, casts and constants. An op that runs
    every time but whose weights are fixed (a convolution, also inside a conv2d_relu
    region, reading a parameter or a prepared value) gets `dlc.prepared_operands`
    instead: its kernel keeps the weights as it prepared them for oneDNN (reordered into
    the blocked layout, or Winograd-transformed) until a parameter changes.
    dlc-plan-memory places the prepared ops' results in the function's prepared block,
    which outlives a run, and the runtime runs these steps (and prepares kept weights)
    only when one of the arguments they read is another tensor than last time or has
    been written since (each buffer counts the writes queued to it), so a model
    predicting in a loop folds its batch norms once, and again after the trainer changed
    the weights.

    Not marked: ops with effects or fresh seeds (random ops, dropout), views (they take
    no step), and ops whose result the function returns (it goes to the caller's buffer).
    Functions that run on several devices or all-reduce are left alone: the runtime
    keeps prepared values for programs that run as one task.

    ```mlir
    // dlc-opt --dlc-hoist-parameter-work
    func.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<8x3x3x3xf32> {dlc.parameter},
                 %s: tensor<8x1x1x1xf32> {dlc.parameter}) -> tensor<1x8x6x6xf32> {
      %ws = dlc.mul %w, %s : (...) -> tensor<8x3x3x3xf32>   // gets dlc.prepared
      %y = dlc.conv2d %x, %ws : (...) -> tensor<1x8x6x6xf32> // reads the input: runs every time,
                                                             // gets dlc.prepared_operands = array<i64: 1>
      return %y : tensor<1x8x6x6xf32>
    }
    ```
  }];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCOrderSteps : Pass<"dlc-order-steps", "mlir::func::FuncOp"> {
  let summary = "Order a multi-device function's ops as its devices should run them";
  let description = [{
    The runtime runs a function's ops in their order, each on its device's in-order
    queue, and makes each stretch of consecutive ops of one device a single task. An
    all-reduce waits for every replica, so queued in the middle of the backward it would
    stall each device until the others catch up. This pass moves the ops that need no
    all-reduce result first and the all-reduces, with what depends on them (the
    optimizer), after, and within each part runs as long a stretch of one device's ops
    as the dependencies allow before switching devices. Each device's ops keep their
    relative order (and so their random seeds); views move to just before their first
    reader. A function on a single device without all-reduces is left as it is.

    ```mlir
    // dlc-opt --dlc-order-steps
    %g0 = dlc.mul %a0, %a0 {dlc.device = #dlc.device<cpu:0>} : ...
    %s:2 = dlc.all_reduce sum %g0, %g1 ...
    %h0 = dlc.exp %a0 {dlc.device = #dlc.device<cpu:0>} : ...
    %g1 = dlc.mul %a1, %a1 {dlc.device = #dlc.device<cpu:1>} : ...
    // becomes: %g0, %h0 (cpu:0), %g1 (cpu:1), then the all-reduce
    ```
  }];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCGroupUpdates : Pass<"dlc-group-updates", "mlir::func::FuncOp"> {
  let summary = "Run a training step's small parameter updates of one formula as one step";
  let description = [{
    An update is an element-wise `dlc.fused` region, or an optimizer op
    (`dlc.sgd_update`, `dlc.sgd_momentum_update`, `dlc.adam_update`), on a host device,
    whose float32 results are read only by the function's return, each into an argument
    it updates (`dlc.updates`), and whose operands are scalars or of its results' shape.
    Updates of at most `max-elements` elements that compute the same formula (the same
    ops and attributes, wired alike, reading the same scalar values: rate, momentum,
    gradient scale) become one: each tensor operand of theirs is reshaped flat and
    joined (`dlc.concat`), the formula runs once over the joins, and each result is
    split back (`dlc.split` on the first axis and `dlc.reshape`, views). Every element
    is computed by the same arithmetic as before, so the results are the same bits.

    Cost rule: the join reads and writes the updates' operands once more, which for
    small parameters costs less than the steps it saves (a norm's scale and shift are a
    few hundred floats, their step mostly fixed cost); a larger update already fills
    the device and keeps its step. GPUs are left alone: their concat copies part by
    part, a transfer for every update it would save.

    ```mlir
    // dlc-opt --dlc-group-updates
    %a:2 = dlc.fused "elementwise"(%g1, %s1, %w1, %rate) ... // 64 elements
    %b:2 = dlc.fused "elementwise"(%g2, %s2, %w2, %rate) ... // 128 elements
    // becomes
    %g = dlc.concat %g1f, %g2f {axis = 0 : i64} : (tensor<64xf32>, tensor<128xf32>) -> tensor<192xf32>
    ...
    %u:2 = dlc.fused "elementwise"(%g, %s, %w, %rate) ... -> (tensor<192xf32>, tensor<192xf32>)
    %w1new, %w2new = dlc.split %u#1 {axis = 0 : i64} : tensor<192xf32> -> tensor<64xf32>, tensor<128xf32>
    ```
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"65536",
           "the most elements an update may have to be grouped">
  ];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCRemat : Pass<"dlc-remat", "mlir::func::FuncOp"> {
  let summary = "Recompute activations in the backward instead of keeping them, under a memory budget";
  let description = [{
    A training step keeps each forward activation its backward reads from the forward
    until that read, so the program holds the most memory around where the forward
    ends. With a `budget` (bytes; 0 leaves the function alone), while the arena
    dlc-plan-memory would make on some device is larger than the budget, this pass finds
    the step where that device's values hold the most (each arena value from its step to
    its last reader) and computes again a value live there but not read there: it copies
    the op that made it (`dlc.recomputed`) to just before the value's first reader after
    that step, and the readers from there on read the copy. The value then dies at its
    last reader before the peak.

    Copied ops: element-wise ops, batch norms and `dlc.fused` regions of those (one
    pass over the bytes they move), and convolutions; never one with effects or fresh
    seeds (dropout would draw another mask), a prepared one or a view. What the copy
    reads must be held at the new place anyway, or be made again there too by copying
    its op (one op deep: a residual's shortcut, a convolution's input), so recomputing
    never keeps another value longer. Among the candidates the pass takes the one that
    frees the most bytes per byte it moves again (a convolution's arithmetic counted as
    the bytes that take as long), then measures again. The plan places values first-fit,
    so its arena can exceed the values' peak: the pass then aims lower by the
    difference, a few times. Copies compute the same bits as the ops they copy.

    The function gets `dlc.remat = {budget, peak_before, peak_after}`, the arenas
    before and after; a budget it cannot reach gets a remark saying where it stopped.
    A forward and backward compiled apart (hybridize) pass their activations as
    results and are left as they are: this works within one function, the compiled
    training step.

    ```mlir
    // dlc-opt --dlc-remat=budget=4096
    %y = dlc.relu %x : tensor<256xf32>        // 1 KiB, read by the forward and the backward
    %z = dlc.softmax %y : tensor<256xf32>
    ...                                       // the peak: %y is kept but not read here
    %y2 = dlc.relu %x {dlc.recomputed} : tensor<256xf32>
    %g = dlc.mul %dz, %y2 : ...               // the backward reads the copy
    ```
  }];
  let options = [
    Option<"budget", "budget", "int64_t", /*default=*/"0",
           "the most bytes of arena values one device may hold at once (0: no budget, the pass does nothing)">
  ];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCPlanMemory : Pass<"dlc-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Place every value of a function: the memory plan the runtime executes";
  let description = [{
    Decides where each value lives while the function runs and records it: every op
    gets `dlc.storage`, one `#dlc.storage` per result, and the function `dlc.arenas`,
    one `#dlc.arena` per device its ops run on, with its size. The lowering into
    runtime programs reads these and decides nothing, so the output of
    `--dlc-pipeline=cpu` (which ends with this pass) is the plan hybridize() and the
    compiled training step execute.

    The runtime runs the ops in their order (dlc-order-steps has ordered them).
    Arguments stay in the caller's buffers. A returned value that owns its memory is
    written straight into its result buffer; arguments, views and values returned twice
    are copied into theirs at the end. A reshape, or a split along the first axis, is a
    view: it lives in the value it views. Every other value takes the first free block
    of its device's arena that fits (`fresh` when the arena grows, `freed` when a dead
    value left it), and gives it back after its last reader; an element-wise op writes
    over an input of its own type that dies there (`in_place`). A block read from another
    device, or by an all-reduce, stays taken until the end. A `dlc.fused` region that
    its device has no fused kernel for (the module's `dlc.targets` say) is marked
    `dlc.op_by_op` and its body planned op by op; otherwise its intermediates never leave
    the cache and only its results are placed.

    ```mlir
    // dlc-opt --dlc-plan-memory
    func.func @chain(%x: tensor<64xf32>) -> tensor<64xf32> {
      %0 = dlc.relu %x : tensor<64xf32>
      %1 = dlc.softmax %0 : tensor<64xf32>
      %2 = dlc.exp %1 : tensor<64xf32>
      return %2 : tensor<64xf32>
    }
    // becomes
    //   func.func @chain(...) attributes {dlc.arenas = [#dlc.arena<cpu:0, 512 bytes>]}
    //   %0 = dlc.relu %x {dlc.storage = [#dlc.storage<arena 0 at 0>]}
    //   %1 = dlc.softmax %0 {dlc.storage = [#dlc.storage<arena 0 at 256>]}
    //   %2 = dlc.exp %1 {dlc.storage = [#dlc.storage<result 0 at 0>]}
    ```
  }];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCFuseAttention : Pass<"dlc-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Replace an unfused attention (matmul, scale, mask, softmax, matmul) by dlc.attention";
  let description = [{
    Code written before fused attention existed, or ported from a framework without it,
    spells attention as its steps: the scores `dlc.matmul %q, %k {transpose_b}` (or
    `dlc.matmul` of `%q` and a `dlc.transpose` of `%k` swapping its last two axes, as
    ONNX exports write it, either operand perhaps scaled by a one-element constant), a
    scale (`dlc.mul` or `dlc.div` by a one-element constant), optionally a mask (`dlc.add` of an
    additive mask, or `dlc.select %mask, %scores, %fill` with a fill of -1e30 or lower),
    `dlc.softmax` over the last axis, and `dlc.matmul` of the weights with the values.
    PyTorch's dynamo exporter writes two more spellings, matched too: the transpose of
    `%k` taken on a view of fewer axes (`dlc.reshape` to (B·H, L, D), `dlc.transpose`
    of the last two, `dlc.reshape` back), and the weights guarded against NaN
    (`dlc.select` of `dlc.compare ne, %p, %p`, 0 and `%p`): `dlc.attention` gives a
    query with nothing to attend zeros, which is what the guard makes of softmax's NaN.
    Where each step's result has no other use (inference, `dlc-run`; a training step's
    backward reads the weights) and query, key and value share their leading dimensions,
    the chain becomes one `dlc.attention`, whose kernels never hold the scores whole.

    ```mlir
    // before
    %s = dlc.matmul %q, %k {transpose_b} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
    %c = dlc.constant dense<2.500000e-01> : tensor<f32>
    %t = dlc.mul %s, %c : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
    %p = dlc.softmax %t {axis = -1 : i64} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %o = dlc.matmul %p, %v : (tensor<2x8x8xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    // after
    %o, %lse, %seed = dlc.attention %q, %k, %v {scale = 2.500000e-01 : f64} : (...) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<i64>)
    ```
  }];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCFuseConvPool : Pass<"dlc-fuse-conv-pool", "mlir::func::FuncOp"> {
  let summary = "Run a convolution and the max pooling of its output as one step, and their gradients";
  let description = [{
    A `dlc.max_pool2d_indexed` (dlc-keep-pool-indices makes a training forward's max
    pooling one) of a `dlc.conv2d`'s output, or of a `conv2d_relu` region's (dlc-fuse's
    convolution with a ReLU epilogue), on a host device, becomes with it a region of
    kind `conv2d_max_pool2d`. The CPU runs it as the convolution's kernel with the
    pooling as an epilogue, a few images at a time (about 4 MiB of activation): the
    pooling then reads the activation from the cache instead of from memory. The
    activation is a result of the region where something after the pooling reads it
    (a forward whose backward was traced to read it returns it); otherwise nothing
    outside the step holds it. Every reader of the activation but the pooling must come
    after the pooling. On the LeafNetwork's blocks at batch 32 (AVX-512 EPYC), a
    convolution and its pooling took 8.1-10.2 ms / 12.8-13.5 ms / 8.5-9.1 ms one after
    the other, 4.4-5.3 / 9.8-11.1 / 7.7-8.2 ms chunked.

    The gradients likewise: a host `dlc.max_pool2d_backward_indexed` read only by a
    `dlc.conv2d_backward_filter` and at most one `dlc.conv2d_backward_data` becomes with
    them a region of kind `max_pool2d_backward_conv2d` (body in that order, operands
    dy, indices, the weights where there is a data gradient, the convolution's input;
    results the data gradient, then the filter gradient's), placed where the last of
    them was when nothing between reads their results. The CPU runs it as the filter
    gradient's kernel with the pooling's gradient before it, chunk by chunk: the
    activation's gradient never leaves the cache (the LeafNetwork's step at batch 32
    plans 30.8 MiB of intermediates instead of 78), and the chunks' filter gradients
    are summed.

    ```mlir
    // before
    %r = dlc.fused "conv2d_relu" (%x, %w, %b) : (...) -> tensor<32x32x127x127xf32> {...}
    %y, %where = dlc.max_pool2d_indexed %r {kernel = array<i64: 4, 4>, stride = array<i64: 2, 2>} : (tensor<32x32x127x127xf32>) -> (tensor<32x32x62x62xf32>, tensor<32x32x62x62xui8>)
    // after
    %y, %where = dlc.fused "conv2d_max_pool2d" (%x, %w, %b) : (...) -> (tensor<32x32x62x62xf32>, tensor<32x32x62x62xui8>) {
    ^bb0(%a: ..., %c: ..., %d: ...):
      %0 = dlc.conv2d %a, %c, %d : (...) -> tensor<32x32x127x127xf32>
      %1 = dlc.relu %0 : tensor<32x32x127x127xf32>
      %2, %3 = dlc.max_pool2d_indexed %1 {...} : (...) -> (...)
      dlc.yield %2, %3 : tensor<32x32x62x62xf32>, tensor<32x32x62x62xui8>
    }
    ```
  }];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

def DLCFuse : Pass<"dlc-fuse", "mlir::func::FuncOp"> {
  let summary = "Group element-wise chains and library-op epilogues into dlc.fused regions";
  let description = [{
    First, in inference, a `dlc.batch_norm` right after a `dlc.conv2d` (whose output has no
    other use) is folded into the convolution: its weights are scaled by
    gamma / sqrt(running_var + epsilon) per output channel and its bias becomes
    (bias - running_mean) * scale + beta, computed by small ops on the parameters. An
    inference `dlc.batch_norm` read only by convolutions without padding (one group) is
    folded into them the other way: it is x * scale + shift per input channel
    (shift = beta - running_mean * scale), so each convolution's weights take scale
    along their input channels, its bias gains the sum of its weights times shift, and
    it reads the norm's input (with padding, the border windows would see zeros where
    the norm gave shift). The seed's blocks (Conv2D, MaxPool2D, BatchNorm, then the next
    Conv2D) predict with one pass over the activations fewer. A norm read only through a
    flatten (`dlc.flatten`, or the reshape to (N, features) Gluon's Flatten traces to) by
    `dlc.dense` inputs folds into the dense layers alike: flattened feature c·S + s is
    channel c's, so the weights, seen as (units, C, S), take scale along C, and the dense
    layers read a flatten of the norm's input (a classifier's last block).
    Then two rewrites, each into a `dlc.fused` region:

    * **Epilogues**: `dlc.relu` of a `dlc.conv2d` or `dlc.dense` whose result has no other
      use becomes a region of kind `conv2d_relu` / `dense_relu`, one step that calls the
      library kernel with a ReLU epilogue. On CPUs the ReLU is a oneDNN post-op (for a
      convolution in plain layouts, a second primitive in place, as a post-op would lose
      oneDNN's fast path there); on GPUs it follows in the same step, cuDNN's activation
      after a convolution and dlc's own bias and activation kernel after cuBLAS's product.
      `dlc.relu6` of a `dlc.conv2d` likewise becomes a `conv2d_relu6` region: oneDNN's
      clip(0, 6) post-op on CPUs (MobileNetV2's blocks, once batch norm is folded); on
      GPUs the region runs op by op. `dlc.silu` of a `dlc.conv2d` (EfficientNet's, which
      canonicalize makes of `x * sigmoid(x)`) becomes a `conv2d_silu` region: oneDNN's
      swish post-op on CPUs, op by op on GPUs. `dlc.gelu` of a `dlc.dense` (BERT's feed-forward,
      predicting) becomes a `dense_gelu` region: oneDNN's gelu_erf post-op on CPUs, op by
      op on GPUs.
      In a backward function, `dlc.relu_backward %g, %x` of `%g = dlc.max_pool2d_backward
      %dy, %x` (the gradient of relu -> max_pool2d) becomes a region of kind
      `max_pool2d_backward_relu`: the pooling's backward passes a window's gradient only
      where its maximum is > 0, which is where the ReLU's mask would have let it through,
      so the mask costs no pass over x.
    * **Element-wise chains**: producer-consumer chains of float32 element-wise ops on
      one device (unary ops, `relu_backward`, and binary ops whose operands have the
      result's shape or one element) become a region of kind `elementwise`. On CPUs the
      runtime runs it as one step, one pass over cache-sized chunks through the existing
      element-wise kernels; on GPUs its ops run one by one. A value used outside the
      region is a result of it.

    Ops stay in place when grouping them would move a use before its definition; regions
    never span devices.

    ```mlir
    // before
    %c = dlc.conv2d %x, %w, %b : (...) -> tensor<4x8x6x6xf32>
    %r = dlc.relu %c : tensor<4x8x6x6xf32>
    // after
    %r = dlc.fused "conv2d_relu" (%x, %w, %b) : (...) -> tensor<4x8x6x6xf32> {
    ^bb0(%a: ..., %b2: ..., %c2: ...):
      %0 = dlc.conv2d %a, %b2, %c2 : (...) -> tensor<4x8x6x6xf32>
      %1 = dlc.relu %0 : tensor<4x8x6x6xf32>
      dlc.yield %1 : tensor<4x8x6x6xf32>
    }
    ```
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"32",
           "most ops in one element-wise region">,
    Option<"epilogues", "epilogues", "bool", /*default=*/"true",
           "fold ReLU epilogues into conv2d and dense, and ReLU gradients into max_pool2d_backward">,
    Option<"elementwise", "elementwise", "bool", /*default=*/"true",
           "group element-wise chains">,
    Option<"foldBatchNorm", "fold-batch-norm", "bool", /*default=*/"true",
           "fold inference-mode batch_norm into the convolution before it, or into the "
           "unpadded convolutions after it">,
  ];
  let dependentDialects = ["mlir::dlc::DLCDialect"];
}

#endif // DLC_DIALECT_DLC_TRANSFORMS_PASSES_TD
