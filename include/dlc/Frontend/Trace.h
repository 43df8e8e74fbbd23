//===- Trace.h - whether this thread is tracing a hybridized function ---------===//
//
// The eager front end asks these while a hybridized function is traced (dlc_hybridize's
// CompiledFunction installs the tracer): nested blocks run inline, and deferred
// initialization pauses the trace to run for real.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_FRONTEND_TRACE_H
#define DLC_FRONTEND_TRACE_H

namespace dlc {

namespace trace {
/// Whether this thread is tracing a hybridized function (nested blocks then run inline).
bool active();

/// Suspends tracing on this thread while it lives: what runs inside really runs (used
/// for deferred parameter initialization during a trace).
class Pause {
public:
  Pause();
  ~Pause();
  Pause(const Pause &) = delete;
  Pause &operator=(const Pause &) = delete;

private:
  void *previous_;
};
} // namespace trace

} // namespace dlc

#endif // DLC_FRONTEND_TRACE_H
