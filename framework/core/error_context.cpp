#include "framework/core/error_context.h"

#include <exception>

namespace ember::detail {

ErrorContext& current_error_context() {
  thread_local ErrorContext current;
  return current;
}

void rethrow_in_context(const ErrorContextFrame* innermost, const ErrorContextFrame* base) {
  std::exception_ptr error = std::current_exception();
  for (const ErrorContextFrame* f = innermost; f && f != base; f = f->parent.get()) {
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      try {
        f->rethrow(e);
      } catch (...) {
        error = std::current_exception();
      }
    }
  }
  std::rethrow_exception(error);
}

}  // namespace ember::detail
