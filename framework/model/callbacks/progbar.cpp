#include "framework/model/callbacks/progbar.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "framework/core/error.h"

namespace ember::callbacks {

namespace {

// printf into a std::string of whatever length it needs (%.4f of 1e300 is over 300 characters).
template <class... Args>
std::string cformat(const char* fmt, Args... args) {
  const int n = std::snprintf(nullptr, 0, fmt, args...);
  std::string out(static_cast<size_t>(std::max(n, 0)), '\0');
  std::snprintf(out.data(), out.size() + 1, fmt, args...);
  return out;
}

// Python's "%.4f"/"%.4e" of a value, which writes every NaN as "nan" (glibc writes "-nan" for some).
std::string format_value(const char* fmt, double v) {
  if (std::isnan(v)) return " nan";
  return cformat(fmt, v);
}

// Python's float floor division and modulo (the remainder takes the divisor's sign).
double py_floordiv(double a, double b) { return std::floor(a / b); }
double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Python's "%d" of a float: truncation toward zero.
long long py_int(double v) { return static_cast<long long>(v); }

bool is_terminal(const std::ostream* stream) {
  if (stream == &std::cout) return ::isatty(STDOUT_FILENO) != 0;
  if (stream == &std::cerr || stream == &std::clog) return ::isatty(STDERR_FILENO) != 0;
  return false;
}

// Keras's "%<numdigits>d/%d": the current step right-aligned to the target's width.
std::string step_count(int64_t current, int64_t target) {
  if (target < 0) return cformat("%7lld/Unknown", static_cast<long long>(current));
  const int digits = static_cast<int>(std::to_string(target).size());
  return cformat("%*lld/%lld", digits, static_cast<long long>(current), static_cast<long long>(target));
}

}  // namespace

std::string format_time_per_unit(double seconds, const std::string& unit_name) {
  if (seconds >= 1 || seconds == 0) return cformat(" %.0fs/", seconds) + unit_name;
  if (seconds >= 1e-3) return cformat(" %.0fms/", seconds * 1000.0) + unit_name;
  return cformat(" %.0fus/", seconds * 1000000.0) + unit_name;
}

Progbar::Progbar(int64_t target, ProgbarOptions options)
    : target_(-1), options_(std::move(options)), stream_(options_.stream ? options_.stream : &std::cout) {
  EMBER_CHECK(options_.width > 0, InvalidArgument) << "Progbar: width must be positive; got " << options_.width;
  EMBER_CHECK(options_.verbose >= 0 && options_.verbose <= 2, InvalidArgument)
      << "Progbar: verbose must be 0, 1 or 2; got " << options_.verbose;
  EMBER_CHECK(options_.interval >= 0, InvalidArgument)
      << "Progbar: interval must be >= 0 seconds; got " << options_.interval;
  set_target(target);
  dynamic_display_ = options_.dynamic_display ? *options_.dynamic_display : is_terminal(stream_);
  stateful_.insert(options_.stateful_metrics.begin(), options_.stateful_metrics.end());
  start_ = now();
  time_at_epoch_start_ = start_;
}

void Progbar::set_target(int64_t target) {
  EMBER_CHECK(target > 0 || target == -1, InvalidArgument)
      << "Progbar: target must be a positive number of steps, or -1 when unknown; got " << target;
  target_ = target;
}

void Progbar::update_stateful_metrics(const std::vector<std::string>& names) {
  stateful_.insert(names.begin(), names.end());
}

double Progbar::now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void Progbar::write(const std::string& text) {
  *stream_ << text;
  stream_->flush();
}

double Progbar::estimate_step_duration(int64_t current, double now) {
  if (current == 0) return 0;
  // The first step (graph building, warm-up) is not representative: once past it, time from its end.
  double time_per_unit;
  if (time_after_first_step_ && current > 1)
    time_per_unit = (now - *time_after_first_step_) / static_cast<double>(current - 1);
  else
    time_per_unit = (now - start_) / static_cast<double>(current);
  if (current == 1) time_after_first_step_ = now;
  return time_per_unit;
}

std::string Progbar::format_eta(double eta) const {
  if (eta > 3600)
    return cformat("%lld:%02lld:%02lld", py_int(py_floordiv(eta, 3600)), py_int(py_floordiv(py_mod(eta, 3600), 60)),
                  py_int(py_mod(eta, 60)));
  if (eta > 60) return cformat("%lld:%02lld", py_int(py_floordiv(eta, 60)), py_int(py_mod(eta, 60)));
  return cformat("%llds", py_int(eta));
}

// verbose 1 compares |x| with 1e-3, verbose 2 compares x itself (so negative values print as %.4e):
// both as tf-keras does.
std::string Progbar::format_values(bool signed_threshold) const {
  std::string info;
  for (const std::string& k : values_order_) {
    const auto& [sum, weight] = values_.at(k);
    const double avg = sum / std::max(1.0, weight);
    const bool fixed = signed_threshold ? avg > 1e-3 : std::abs(avg) > 1e-3;
    info += " - " + k + ":" + format_value(fixed ? " %.4f" : " %.4e", avg);
  }
  return info;
}

void Progbar::update(int64_t current, const Logs& values, std::optional<bool> finalize_opt) {
  const bool finalize = finalize_opt ? *finalize_opt : (target_ >= 0 && current >= target_);
  for (const auto& [k, v] : values) {
    if (std::find(values_order_.begin(), values_order_.end(), k) == values_order_.end()) values_order_.push_back(k);
    if (stateful_.count(k)) {
      values_[k] = {v, 1.0};
    } else {
      // Weighted by the steps this update covers (at least 1, for a repeated final update).
      const double base = static_cast<double>(std::max<int64_t>(current - seen_so_far_, 1));
      auto it = values_.find(k);
      if (it == values_.end())
        values_[k] = {v * base, base};
      else
        it->second = {it->second.first + v * base, it->second.second + base};
    }
  }
  seen_so_far_ = current;

  const double now = this->now();
  std::string info = cformat(" - %.0fs", now - start_);
  if (target_ >= 0 && current == target_) time_at_epoch_end_ = now;

  if (options_.verbose == 1) {
    if (last_update_ && now - *last_update_ < options_.interval && !finalize) return;
    const size_t prev_total_width = total_width_;
    std::string bar = step_count(current, target_);
    if (target_ >= 0) {
      const double prog = static_cast<double>(current) / static_cast<double>(target_);
      const int64_t prog_width = static_cast<int64_t>(options_.width * prog);
      bar += " [";
      if (prog_width > 0) {
        bar += std::string(static_cast<size_t>(prog_width - 1), '=');
        bar += current < target_ ? '>' : '=';
      }
      bar += std::string(static_cast<size_t>(std::max<int64_t>(options_.width - prog_width, 0)), '.');
      bar += "]";
    }
    total_width_ = bar.size();

    const double time_per_unit = estimate_step_duration(current, now);
    if (target_ < 0 || finalize)
      info += format_time_per_unit(time_per_unit, options_.unit_name);
    else
      info = " - ETA: " + format_eta(time_per_unit * static_cast<double>(target_ - current));
    info += format_values(false);

    total_width_ += info.size();
    if (dynamic_display_) {
      // Back over the previous bar and blank whatever of it the new one does not cover.
      if (prev_total_width > total_width_) info += std::string(prev_total_width - total_width_, ' ');
      if (finalize) info += "\n";
      write(std::string(prev_total_width, '\b') + "\r" + bar + info);
    } else if (finalize) {
      write(bar + info + "\n");
    }
  } else if (options_.verbose == 2 && finalize) {
    info = step_count(current, target_) + info + format_values(true);
    if (time_at_epoch_end_) {
      const double time_per_epoch = *time_at_epoch_end_ - time_at_epoch_start_;
      const double avg_time_per_step = time_per_epoch / static_cast<double>(target_);
      time_at_epoch_start_ = now;
      time_at_epoch_end_.reset();
      info += " -" + format_time_per_unit(time_per_epoch, "epoch");
      info += " -" + format_time_per_unit(avg_time_per_step, options_.unit_name);
      info += "\n";
    }
    write(info);
  }
  last_update_ = now;
}

void Progbar::add(int64_t n, const Logs& values) { update(seen_so_far_ + n, values); }

}  // namespace ember::callbacks
