#pragma once
// Internal: AUTOTUNE's choice, for one pass, between making elements ahead on background threads (the
// prefetch thread, the parallel map's workers) and making each one on the reader's thread when it asks.
//
// Background threads pay when a core is free to run them. Where the reader's own work already keeps every
// core busy (a CPU training step, whose intra-op threads use them all), a pipeline thread takes its time
// from that work and adds two thread hand-offs per element, and making the element in place costs less:
// at batch 1 on 2 cores, 10-15 us against 1-2 us a step. Nothing tells the two cases apart in advance, so
// the pass measures. It starts in the background (as tf.data), then times the reader's cycle (from one
// element to the next, the reader's own work included) over a window in each mode and keeps the one with
// the lower mean (the throughput: a background thread's cost comes as a few long cycles, which a median
// would miss), measuring again after holds that double while the choice stays the same. Each mode's
// window starts after a settling stretch, which lets the background fill its buffers and the reader drain
// them. Stages given explicit numbers (num_parallel_calls = 4, prefetch(2)) always run in the background.
// A Dataset (and its copies) remembers the last choice and hold of its passes: the next pass (fit's next
// epoch) starts with them instead of starting over.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

namespace ember::data::detail {

// What a Dataset's passes learnt: the choice and hold of the last one that made a choice.
struct TunerMemory {
  std::mutex mu;
  std::optional<bool> choice;
  int64_t hold = 0;
};

class ProductionTuner {
 public:
  static constexpr int64_t kSettle = 32;  // cycles after a switch (and at the start) that are not timed
  static constexpr int64_t kWindow = 64;  // cycles timed per mode
  static constexpr int64_t kMinHold = 1024, kMaxHold = 16384;  // cycles between measurements

  explicit ProductionTuner(std::shared_ptr<TunerMemory> memory = nullptr);
  ~ProductionTuner();  // leaves the pass's choice to the memory
  ProductionTuner(const ProductionTuner&) = delete;
  ProductionTuner& operator=(const ProductionTuner&) = delete;

  // Whether the AUTOTUNE stages make the element being asked for on the asking thread (any thread).
  bool produce_inline() const { return inline_.load(std::memory_order_relaxed); }
  // An AUTOTUNE stage joined the pass: from now on the reader's cycles are timed.
  void add_stage() { has_stages_.store(true, std::memory_order_relaxed); }
  // The reader received an element (the reader's thread only): ends the cycle begun by the previous one.
  void element_done();
  // One cycle of the reader, in seconds: advances the measurement and may switch the mode.
  void add_cycle(double seconds);

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { settle, measure, hold };
  void set_mode(bool produce_inline);

  std::shared_ptr<TunerMemory> memory_;
  std::atomic<bool> inline_{false}, has_stages_{false};
  std::optional<Clock::time_point> last_;
  Phase phase_ = Phase::settle;
  int64_t countdown_ = kSettle;
  double sum_ = 0;      // of the cycles timed so far in this mode's window
  int64_t samples_ = 0;  // how many
  double mean_[2] = {0, 0};  // mean cycle [background, inline] of this round
  bool measured_[2] = {false, false};
  int64_t hold_ = kMinHold;
  std::optional<bool> last_choice_;
};

}  // namespace ember::data::detail
