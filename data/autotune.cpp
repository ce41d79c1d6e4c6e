// AUTOTUNE's background-or-inline choice (see autotune.h).
#include "data/autotune.h"

#include "framework/core/parallel.h"

#include <algorithm>
#include <utility>

namespace ember::data::detail {

void ProductionTuner::element_done() {
  if (!has_stages_.load(std::memory_order_relaxed)) return;
  const Clock::time_point now = Clock::now();
  const std::optional<Clock::time_point> last = std::exchange(last_, now);
  if (last) add_cycle(std::chrono::duration<double>(now - *last).count());  // the first element ends no cycle
}

ProductionTuner::ProductionTuner(std::shared_ptr<TunerMemory> memory) : memory_(std::move(memory)) {
  if (!memory_) return;
  std::lock_guard<std::mutex> lock(memory_->mu);
  if (!memory_->choice) return;
  // The last pass's choice, held as long as it was holding it; then timed first in the next round.
  last_choice_ = memory_->choice;
  hold_ = memory_->hold;
  phase_ = Phase::hold;
  countdown_ = hold_;
  set_mode(*last_choice_);
}

ProductionTuner::~ProductionTuner() {
  if (!memory_ || !last_choice_) return;
  std::lock_guard<std::mutex> lock(memory_->mu);
  memory_->choice = last_choice_;
  memory_->hold = hold_;
}

void ProductionTuner::set_mode(bool produce_inline) {
  // The reader's thread is about to run the pipeline's functions: it gets the denormal flags that every
  // pipeline thread carries (init_worker_thread), so that a function's results do not depend on the mode.
  if (produce_inline) set_denormal_flags();
  inline_.store(produce_inline, std::memory_order_relaxed);
}

void ProductionTuner::add_cycle(double seconds) {
  const bool mode = produce_inline();
  if (phase_ != Phase::measure) {  // settling or holding
    if (--countdown_ == 0) {
      phase_ = Phase::measure;
      sum_ = 0;
      samples_ = 0;
    }
    return;
  }
  sum_ += seconds;
  ++samples_;
  // Once this window's sum passes the other mode's whole window, this mode has lost: no need to time more.
  const bool lost = measured_[!mode] && sum_ > mean_[!mode] * static_cast<double>(kWindow);
  if (samples_ < kWindow && !lost) return;
  mean_[mode] = sum_ / static_cast<double>(samples_);
  measured_[mode] = true;
  if (!measured_[!mode]) {  // now the other mode, once it has settled
    set_mode(!mode);
    phase_ = Phase::settle;
    countdown_ = kSettle;
    return;
  }
  const bool choice = mean_[1] < mean_[0];
  hold_ = last_choice_ == choice ? std::min(2 * hold_, kMaxHold) : kMinHold;
  last_choice_ = choice;
  measured_[0] = measured_[1] = false;
  set_mode(choice);
  phase_ = Phase::hold;  // the next round times the chosen mode first: the hold has settled it
  countdown_ = hold_;
}

}  // namespace ember::data::detail
