#include "framework/model/callbacks/terminate_on_nan.h"

#include <cmath>
#include <iostream>

#include "framework/core/error.h"
#include "framework/core/python_format.h"
#include "framework/model/model.h"

namespace ember::callbacks {

void TerminateOnNaN::on_train_batch_end(int64_t batch, const Logs& logs) {
  const std::optional<double> loss = logs.get("loss");
  if (!loss || std::isfinite(*loss)) return;
  EMBER_CHECK(!options_.raise_error, FailedPrecondition)
      << "TerminateOnNaN: NaN or Inf loss encountered at batch " << batch << ". Loss value: "
      << python_float_repr(*loss) << ". Terminating training immediately.";
  std::cout << "Batch " << batch << ": Invalid loss, terminating training\n" << std::flush;
  EMBER_CHECK(model(), FailedPrecondition)
      << "TerminateOnNaN: cannot stop training without a model (set_model was not called)";
  model()->stop_training = true;
}

}  // namespace ember::callbacks
