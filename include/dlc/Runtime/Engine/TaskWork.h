//===- TaskWork.h - the work of a queued task, kept inline ------------------===//
//
// A task's work is a callable that runs once and is then dropped. std::function would
// copy it onto the heap unless it is trivially copyable and at most two pointers in size;
// an eager op's kernel call (its kernel arguments and attributes) is neither, so every op
// paid an allocation and a free for it. TaskWork is move-only and keeps callables of up
// to kInlineBytes inside itself; larger ones go to the heap.
//
//===----------------------------------------------------------------------===//
#ifndef DLC_RUNTIME_ENGINE_TASKWORK_H
#define DLC_RUNTIME_ENGINE_TASKWORK_H

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace dlc {

class TaskWork {
public:
  /// Room for an eager op's call (KernelArgs with its attributes and kernel) and then some.
  static constexpr size_t kInlineBytes = 160;

  TaskWork() = default;
  TaskWork(std::nullptr_t) {}
  template <typename F, typename Callable = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<Callable, TaskWork> &&
                                        std::is_invocable_r_v<void, Callable &>>>
  TaskWork(F &&callable) {
    if constexpr (fitsInline<Callable>()) {
      ::new (static_cast<void *>(storage_)) Callable(std::forward<F>(callable));
      ops_ = &inlineOps<Callable>;
    } else {
      ::new (static_cast<void *>(storage_)) Callable *(new Callable(std::forward<F>(callable)));
      ops_ = &heapOps<Callable>;
    }
  }
  TaskWork(TaskWork &&other) noexcept { take(other); }
  TaskWork &operator=(TaskWork &&other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  TaskWork &operator=(std::nullptr_t) {
    reset();
    return *this;
  }
  TaskWork(const TaskWork &) = delete;
  TaskWork &operator=(const TaskWork &) = delete;
  ~TaskWork() { reset(); }

  explicit operator bool() const { return ops_ != nullptr; }
  /// Runs the work, which must be there (the engine runs a task's work once, before it
  /// drops it). No exception of its own: translation units built without exceptions
  /// (the MLIR side) include this header.
  void operator()() { ops_->call(storage_); }

private:
  struct Ops {
    void (*call)(void *storage);
    void (*move)(void *from, void *to); ///< into uninitialized `to`; `from` is destroyed
    void (*destroy)(void *storage);
  };

  template <typename Callable> static constexpr bool fitsInline() {
    return sizeof(Callable) <= kInlineBytes && alignof(Callable) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<Callable>;
  }

  template <typename Callable>
  static constexpr Ops inlineOps = {
      [](void *s) { (*static_cast<Callable *>(s))(); },
      [](void *from, void *to) {
        ::new (to) Callable(std::move(*static_cast<Callable *>(from)));
        static_cast<Callable *>(from)->~Callable();
      },
      [](void *s) { static_cast<Callable *>(s)->~Callable(); }};

  template <typename Callable>
  static constexpr Ops heapOps = {
      [](void *s) { (**static_cast<Callable **>(s))(); },
      [](void *from, void *to) { ::new (to) Callable *(*static_cast<Callable **>(from)); },
      [](void *s) { delete *static_cast<Callable **>(s); }};

  void take(TaskWork &other) noexcept {
    if (!other.ops_)
      return;
    other.ops_->move(other.storage_, storage_);
    ops_ = std::exchange(other.ops_, nullptr);
  }
  void reset() {
    if (const Ops *ops = std::exchange(ops_, nullptr))
      ops->destroy(storage_);
  }

  alignas(std::max_align_t) unsigned char storage_[kInlineBytes];
  const Ops *ops_ = nullptr;
};

} // namespace dlc

#endif // DLC_RUNTIME_ENGINE_TASKWORK_H
