#pragma once
// The errors of collective communication (TF: DeadlineExceededError, UnavailableError).
#include "framework/core/error.h"

namespace ember {
// An operation did not finish in time: a collective whose peer died or hangs.
class DeadlineExceeded : public Error { using Error::Error; };
// A service is not available: the communicator is broken, or the transport failed.
class Unavailable : public Error { using Error::Error; };
}  // namespace ember
