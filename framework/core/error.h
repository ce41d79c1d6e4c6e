#pragma once
// ember::Error and its subclasses, plus EMBER_CHECK for one-line validation with a streamed message.
#include <sstream>
#include <stdexcept>
#include <string>

namespace ember {

// Base of every error Ember throws; what() is the full message.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};
// A caller passed a bad argument: wrong shape, dtype, axis, index.
class InvalidArgument : public Error { using Error::Error; };
// Something named does not exist (file, layer, kernel).
class NotFound : public Error { using Error::Error; };
// The system is not in a state where the call makes sense.
class FailedPrecondition : public Error { using Error::Error; };
// An index or value lies outside the valid range.
class OutOfRange : public Error { using Error::Error; };
// Memory or another resource ran out.
class ResourceExhausted : public Error { using Error::Error; };
// The operation has no implementation for this device/dtype.
class Unimplemented : public Error { using Error::Error; };
// Data is unreadable: a corrupt or truncated file (TF: DataLossError).
class DataLoss : public Error { using Error::Error; };
// A broken invariant inside Ember itself.
class Internal : public Error { using Error::Error; };
// An operation did not finish in time: a collective whose peer died or hangs (TF: DeadlineExceededError).
class DeadlineExceeded : public Error { using Error::Error; };
// A service is not available: the communicator is broken, or the transport failed (TF: UnavailableError).
class Unavailable : public Error { using Error::Error; };

namespace detail {
// Collects a message with << and throws E when it goes out of scope at the end of the statement.
template <class E>
class Thrower {
 public:
  Thrower(const char* file, int line) : file_(file), line_(line) {}
  template <class T>
  Thrower& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  ~Thrower() noexcept(false) { throw E(os_.str()); }

 private:
  std::ostringstream os_;
  const char* file_;
  int line_;
};
}  // namespace detail

// Builds an error from streamable parts: throw make_error<InvalidArgument>("op: got ", shape);
template <class E, class... Parts>
E make_error(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return E(os.str());
}

}  // namespace ember

// EMBER_CHECK(cond, InvalidArgument) << "op: got " << shape;   throws when cond is false.
#define EMBER_CHECK(cond, ErrorType) \
  if (__builtin_expect(!!(cond), 1)) \
    ;                                \
  else                               \
    ::ember::detail::Thrower<::ember::ErrorType>(__FILE__, __LINE__)
