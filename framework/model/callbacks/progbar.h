#pragma once
// Progbar (tf-keras: keras.utils.Progbar in tf_keras/utils/generic_utils.py): the text progress bar
// fit/evaluate/predict print, `12/469 [>.............................] - ETA: 3s - loss: 0.4000`, ending
// in `469/469 [==============================] - 3s 6ms/step - loss: 0.4123`.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "framework/model/callbacks/callback.h"

namespace ember::callbacks {

struct ProgbarOptions {
  int width = 30;
  int verbose = 1;         // 0 silent, 1 bar updated as it goes, 2 one line at the end
  double interval = 0.05;  // seconds between two redraws of the bar (the final one is always drawn)
  // Names whose values are shown as given; the others are averaged over the steps seen (weighted by
  // how many steps each update covered).
  std::vector<std::string> stateful_metrics{};
  std::string unit_name = "step";
  std::ostream* stream = nullptr;  // null: std::cout
  // Redraw in place with \b and \r. Unset: only when the stream is std::cout/std::cerr/std::clog and
  // that file descriptor is a terminal. Otherwise (a log file, a pipe) only the finished line of each
  // bar is written, so logs hold one line per epoch rather than hundreds of partial bars.
  std::optional<bool> dynamic_display{};
  std::function<double()> clock;  // seconds; empty: a steady clock. Tests inject a fake one.
};

class Progbar {
 public:
  // target: the number of steps expected, or -1 when unknown.
  explicit Progbar(int64_t target, ProgbarOptions options = {});

  // Shows progress at step `current` with these values. finalize unset: current >= target.
  void update(int64_t current, const Logs& values = {}, std::optional<bool> finalize = std::nullopt);
  // update(steps seen so far + n, values).
  void add(int64_t n, const Logs& values = {});

  int64_t target() const { return target_; }
  // Sets the target once it is known (ProgbarLogger after an epoch of unknown length).
  void set_target(int64_t target);
  // Adds names to the stateful metrics.
  void update_stateful_metrics(const std::vector<std::string>& names);
  bool dynamic_display() const { return dynamic_display_; }

 private:
  double now() const;
  std::string format_values(bool signed_threshold) const;
  std::string format_eta(double eta) const;
  double estimate_step_duration(int64_t current, double now);
  void write(const std::string& text);

  int64_t target_;
  ProgbarOptions options_;
  std::ostream* stream_;
  bool dynamic_display_;
  std::set<std::string> stateful_;
  // Per name: (weighted sum, weight); shown as sum / max(1, weight). Names in first-seen order.
  std::map<std::string, std::pair<double, double>> values_;
  std::vector<std::string> values_order_;
  int64_t seen_so_far_ = 0;
  size_t total_width_ = 0;
  double start_;
  std::optional<double> last_update_;  // unset: never drawn, so the first update always draws
  double time_at_epoch_start_;
  std::optional<double> time_at_epoch_end_;
  std::optional<double> time_after_first_step_;
};

// Keras's duration text: " 3s/step", " 6ms/step" or " 120us/step" (whole numbers, rounded).
std::string format_time_per_unit(double seconds, const std::string& unit_name);

}  // namespace ember::callbacks
