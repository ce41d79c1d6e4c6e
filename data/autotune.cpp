// AUTOTUNE's background-or-inline choice (see autotune.h).
#include "data/autotune.h"

#include <utility>

#include "framework/core/parallel.h"

namespace ember::data::detail {

// The reader's thread is about to run the pipeline's functions: it gets the denormal flags that every
// pipeline thread carries (init_worker_thread), so that a function's results do not depend on the mode.
ProductionTuner::ProductionTuner(std::shared_ptr<ember::detail::TunerMemory> memory)
    : tuner_(kOptions, std::move(memory), [](bool produce_inline) {
        if (produce_inline) set_denormal_flags();
      }) {}

}  // namespace ember::data::detail
