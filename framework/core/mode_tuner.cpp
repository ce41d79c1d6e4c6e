// A timed choice between two modes of a repeated cycle (see mode_tuner.h).
#include "framework/core/mode_tuner.h"

#include <algorithm>
#include <utility>

namespace ember::detail {

ModeTuner::ModeTuner(ModeTunerOptions options, std::shared_ptr<TunerMemory> memory,
                     std::function<void(bool)> on_switch)
    : options_(options),
      memory_(std::move(memory)),
      on_switch_(std::move(on_switch)),
      countdown_(options.settle),
      hold_(options.min_hold) {
  if (!memory_) return;
  std::lock_guard<std::mutex> lock(memory_->mu);
  if (!memory_->choice) return;
  // The last choice, held as long as it was being held; then timed first in the next round.
  last_choice_ = memory_->choice;
  hold_ = memory_->hold;
  phase_ = Phase::hold;
  countdown_ = hold_;
  set_mode(*last_choice_);
}

ModeTuner::~ModeTuner() {
  if (!memory_ || !last_choice_) return;
  std::lock_guard<std::mutex> lock(memory_->mu);
  memory_->choice = last_choice_;
  memory_->hold = hold_;
}

void ModeTuner::set_mode(bool mode) {
  if (on_switch_) on_switch_(mode);
  mode_.store(mode, std::memory_order_relaxed);
}

void ModeTuner::cycle_done() {
  const Clock::time_point now = Clock::now();
  const std::optional<Clock::time_point> last = std::exchange(last_, now);
  if (last) add_cycle(std::chrono::duration<double>(now - *last).count());
}

namespace {
// The median of a window of cycles (reorders it).
double median_cycle(std::vector<double>& v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}
}  // namespace

bool ModeTuner::held_cycle_strays(double seconds) {
  if (options_.retime_ratio <= 0 || retime_above_ <= 0) return false;
  held_.push_back(seconds);
  if (static_cast<int64_t>(held_.size()) < options_.window) return false;
  double sum = 0;
  for (double s : held_) sum += s;
  const double m = median_cycle(held_);
  held_.clear();
  if (m <= retime_above_) return false;
  // This window times the held mode as things are now (a whole window more of a mode that a load has made
  // slow can cost seconds).
  const bool mode = this->mode();
  mean_[mode] = sum / static_cast<double>(options_.window);
  median_[mode] = m;
  return true;
}

void ModeTuner::add_cycle(double seconds) {
  const bool mode = this->mode();
  if (phase_ == Phase::hold && held_cycle_strays(seconds)) {
    // The conditions the choice was made in have changed: the window just seen times this mode, the other
    // is timed now, and the next choice's hold starts over.
    measured_[mode] = true;
    measured_[!mode] = false;
    last_choice_.reset();
    set_mode(!mode);
    phase_ = Phase::settle;
    countdown_ = options_.settle;
    return;
  }
  if (phase_ != Phase::measure) {  // settling or holding
    if (--countdown_ <= 0) {
      phase_ = Phase::measure;
      sum_ = 0;
      samples_ = 0;
      timed_.clear();
    }
    return;
  }
  sum_ += seconds;
  ++samples_;
  if (options_.retime_ratio > 0) timed_.push_back(seconds);
  const bool lost = measured_[!mode] && sum_ > mean_[!mode] * static_cast<double>(options_.window);
  if (samples_ < options_.window && !lost) return;
  mean_[mode] = sum_ / static_cast<double>(samples_);
  if (!timed_.empty()) median_[mode] = median_cycle(timed_);
  measured_[mode] = true;
  if (!measured_[!mode]) {  // now the other mode, once it has settled
    set_mode(!mode);
    phase_ = Phase::settle;
    countdown_ = options_.settle;
    return;
  }
  const bool choice = mean_[1] < mean_[0];
  hold_ = last_choice_ == choice ? std::min(2 * hold_, options_.max_hold) : options_.min_hold;
  last_choice_ = choice;
  measured_[0] = measured_[1] = false;
  if (choice != mode) set_mode(choice);
  retime_above_ = options_.retime_ratio * std::max(median_[0], median_[1]);
  held_.clear();
  phase_ = Phase::hold;  // the next round times the chosen mode first: the hold has settled it
  countdown_ = hold_;
}

}  // namespace ember::detail
