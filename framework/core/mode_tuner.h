#pragma once
// Internal: a choice between two ways of running a repeated cycle that compute the same results, made by
// timing them as the program runs: AUTOTUNE's background-or-inline production in the input pipeline
// (data/autotune.h) and the training step's thread count (framework/model/compiled_steps.cpp).
//
// It starts in mode false, then times the cycle (from one cycle_done to the next, everything in between
// included) over a window in each mode and keeps the one with the lower mean (the throughput: a cost that
// comes as a few long cycles would escape a median), measuring again after holds that double while the
// choice stays the same. Each mode's window starts after a settling stretch (buffers fill, caches warm). A
// mode whose window sum already passes the other mode's whole window has lost: its timing stops there. With a
// retime_ratio, a hold also ends when the median of `window` held cycles passes that factor times the slower
// mode's timed median (a load arrived: the held mode may have lost its lead); that window then times the
// held mode, and the other is timed next. The median, so that a cycle the scheduler interrupted once is no
// change; the slower mode's, so that a mode that won by far is not timed again for noise. A
// TunerMemory carries the last choice and hold from one tuner to the next (a dataset's passes, a model's
// fit calls), which then starts holding that choice instead of starting over.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace ember::detail {

// What the tuners sharing it learnt: the choice and hold of the last one that made a choice.
struct TunerMemory {
  std::mutex mu;
  std::optional<bool> choice;
  int64_t hold = 0;
};

struct ModeTunerOptions {
  int64_t settle;    // cycles after a switch (and at the start) that are not timed
  int64_t window;    // cycles timed per mode
  int64_t min_hold;  // cycles between measurements, doubling up to max_hold while the choice stays
  int64_t max_hold;
  double retime_ratio = 0;  // > 1: a held window's median this much over the slower mode's retimes; 0: never
};

class ModeTuner {
 public:
  // on_switch(mode) runs on the timing thread just before the mode changes (also when a memory restores it).
  ModeTuner(ModeTunerOptions options, std::shared_ptr<TunerMemory> memory,
            std::function<void(bool)> on_switch = nullptr);
  ~ModeTuner();  // leaves the choice to the memory
  ModeTuner(const ModeTuner&) = delete;
  ModeTuner& operator=(const ModeTuner&) = delete;

  // The current mode (any thread).
  bool mode() const { return mode_.load(std::memory_order_relaxed); }
  // Ends the cycle begun by the previous call or start_cycle (the timing thread only); the first call ends none.
  void cycle_done();
  // Begins a cycle now, dropping the one in progress (whose time was no cycle's).
  void start_cycle() { last_ = Clock::now(); }
  // One cycle, in seconds: advances the measurement and may switch the mode.
  void add_cycle(double seconds);

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { settle, measure, hold };
  void set_mode(bool mode);
  bool held_cycle_strays(double seconds);

  ModeTunerOptions options_;
  std::shared_ptr<TunerMemory> memory_;
  std::function<void(bool)> on_switch_;
  std::atomic<bool> mode_{false};
  std::optional<Clock::time_point> last_;
  Phase phase_ = Phase::settle;
  int64_t countdown_;
  double sum_ = 0;       // of the cycles timed so far in this mode's window
  int64_t samples_ = 0;  // how many
  double mean_[2] = {0, 0};  // mean cycle per mode in this round
  bool measured_[2] = {false, false};
  int64_t hold_;
  std::optional<bool> last_choice_;
  std::vector<double> timed_;     // this mode's timed cycles in this round (with a retime_ratio)
  double median_[2] = {0, 0};     // median cycle per mode in this round (with a retime_ratio)
  double retime_above_ = 0;       // the held window median that ends a hold; 0: none
  std::vector<double> held_;      // the held cycles since the last comparison
};

}  // namespace ember::detail
