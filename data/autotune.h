#pragma once
// Internal: AUTOTUNE's choice, for one pass, between making elements ahead on background threads (the
// prefetch thread, the parallel map's workers) and making each one on the reader's thread when it asks.
//
// Background threads pay when a core is free to run them. Where the reader's own work already keeps every
// core busy (a CPU training step, whose intra-op threads use them all), a pipeline thread takes its time
// from that work and adds two thread hand-offs per element, and making the element in place costs less:
// at batch 1 on 2 cores, 10-15 us against 1-2 us a step. Nothing tells the two cases apart in advance, so
// the pass measures the reader's cycle (from one element to the next, the reader's own work included) in
// each mode with a ModeTuner (framework/core/mode_tuner.h), starting in the background as tf.data does.
// The settling stretch lets the background fill its buffers and the reader drain them. Stages given
// explicit numbers (num_parallel_calls = 4, prefetch(2)) always run in the background. A Dataset (and its
// copies) remembers the last choice and hold of its passes: the next pass (fit's next epoch) starts with them.
#include <atomic>
#include <memory>

#include "framework/core/mode_tuner.h"

namespace ember::data::detail {

class ProductionTuner {
 public:
  static constexpr ember::detail::ModeTunerOptions kOptions{.settle = 32, .window = 64, .min_hold = 1024,
                                                            .max_hold = 16384};
  static constexpr int64_t kSettle = kOptions.settle, kWindow = kOptions.window, kMinHold = kOptions.min_hold;

  explicit ProductionTuner(std::shared_ptr<ember::detail::TunerMemory> memory = nullptr);

  // Whether the AUTOTUNE stages make the element being asked for on the asking thread (any thread).
  bool produce_inline() const { return tuner_.mode(); }
  // An AUTOTUNE stage joined the pass: from now on the reader's cycles are timed.
  void add_stage() { has_stages_.store(true, std::memory_order_relaxed); }
  // The reader received an element (the reader's thread only): ends the cycle begun by the previous one.
  void element_done() {
    if (has_stages_.load(std::memory_order_relaxed)) tuner_.cycle_done();
  }
  // One cycle of the reader, in seconds (tests feed them directly).
  void add_cycle(double seconds) { tuner_.add_cycle(seconds); }

 private:
  ember::detail::ModeTuner tuner_;
  std::atomic<bool> has_stages_{false};
};

}  // namespace ember::data::detail
