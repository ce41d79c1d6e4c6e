#pragma once
// What a layer or a loss adds to an Error raised inside it ("Embedding 'embedding' (input_dim 10): gather: ..."),
// kept with the ops a trace records there, so that a traced function's replay raises the message eager
// execution raises, as TF's graph errors name the node's layer.
#include <functional>
#include <memory>
#include <utility>

#include "framework/core/error.h"

namespace ember {

// One frame of context: `rethrow` throws the wrapped error for an Error raised inside it, or returns to leave
// that error as it is; frames nest through `parent`.
struct ErrorContextFrame {
  std::function<void(const Error&)> rethrow;
  std::shared_ptr<const ErrorContextFrame> parent;
};
using ErrorContext = std::shared_ptr<const ErrorContextFrame>;

namespace detail {
// The innermost frame of this thread (nullptr: none).
ErrorContext& current_error_context();
// Called inside a catch block: applies the frames from `innermost` out to (not including) `base` to the Error
// being handled, each to what the one inside it threw, then throws the result.
[[noreturn]] void rethrow_in_context(const ErrorContextFrame* innermost, const ErrorContextFrame* base);
}  // namespace detail

// Runs body() with a frame whose `wrap` takes each E raised inside it (E: Error or a subclass) and throws the error
// with the context added. Ops recorded by a trace inside keep the frame, and their errors on replay get it too, so
// `wrap` must hold what it prints by value (a name, a shape), never a layer or tensor that may be gone by then.
template <class E = Error, class Wrap, class Body>
decltype(auto) with_error_context(Wrap wrap, Body&& body) {
  ErrorContext& current = detail::current_error_context();
  auto frame = std::make_shared<const ErrorContextFrame>(ErrorContextFrame{
      [wrap = std::move(wrap)](const Error& e) {
        if (const E* x = dynamic_cast<const E*>(&e)) wrap(*x);
      },
      current});
  struct Restore {
    ErrorContext& current;
    ErrorContext outer;
    ~Restore() { current = std::move(outer); }
  };
  try {
    Restore restore{current, std::exchange(current, frame)};
    return std::forward<Body>(body)();
  } catch (const Error&) {
    detail::rethrow_in_context(frame.get(), frame->parent.get());
  }
}

}  // namespace ember
