// ModeTuner's choice from cycle times it is given (add_cycle), so each case is exact: which mode it times,
// keeps, and when it times them again, a retime_ratio ending a hold once the held mode's cycles (their median:
// a cycle interrupted now and then is no change) pass the slower mode's.
#include <catch2/catch.hpp>

#include <functional>

#include "framework/core/mode_tuner.h"

using ember::detail::ModeTuner;
using ember::detail::ModeTunerOptions;

namespace {

// Feeds n cycles whose length depends on the mode the tuner is in (the machine's speed each way) and
// returns how many of them ran in mode true.
int feed(ModeTuner& tuner, int n, const std::function<double(bool)>& seconds) {
  int in_true = 0;
  for (int i = 0; i < n; ++i) {
    const bool mode = tuner.mode();
    in_true += mode;
    tuner.add_cycle(seconds(mode));
  }
  return in_true;
}

// Mode false (the pool) costs `pool`, mode true (one thread) `one`.
std::function<double(bool)> speeds(double pool, double one) {
  return [=](bool one_thread) { return one_thread ? one : pool; };
}

constexpr ModeTunerOptions kOptions{.settle = 1, .window = 4, .min_hold = 100, .max_hold = 400};

}  // namespace

TEST_CASE("mode tuner: times both modes and keeps the faster", "[core][tuner]") {
  ModeTuner tuner(kOptions, nullptr);
  CHECK_FALSE(tuner.mode());
  // 1 settling + 4 timed cycles in mode false, then 1 settling and the timed cycles of mode true, which loses
  // as soon as its sum passes mode false's whole window (4.0): after 3 cycles of 2.0.
  CHECK(feed(tuner, 5, speeds(1.0, 2.0)) == 0);
  CHECK(tuner.mode());
  CHECK(feed(tuner, 4, speeds(1.0, 2.0)) == 4);
  CHECK_FALSE(tuner.mode());
  // Held for min_hold cycles whatever the speeds do in between.
  CHECK(feed(tuner, 99, speeds(5.0, 1.0)) == 0);
}

TEST_CASE("mode tuner: a retime_ratio times the other mode at once when a load slows the held one",
          "[core][tuner]") {
  ModeTunerOptions options = kOptions;
  options.retime_ratio = 1.2;
  ModeTuner tuner(options, nullptr);
  feed(tuner, 9, speeds(1.0, 2.0));  // chooses the pool, as above; one thread's median was 2.0
  REQUIRE_FALSE(tuner.mode());
  // Held windows up to 1.2 times one thread's 2.0 keep the hold.
  CHECK(feed(tuner, 40, speeds(2.2, 2.0)) == 0);
  // A load arrives: the pool's cycles take 3.0, one thread's 1.5. The first held window that passes 2.4 (4
  // cycles) ends the hold and times the pool; then one thread is timed (1 settling + 4), and wins.
  CHECK(feed(tuner, 4, speeds(3.0, 1.5)) == 0);
  CHECK(tuner.mode());
  CHECK(feed(tuner, 5, speeds(3.0, 1.5)) == 5);
  CHECK(tuner.mode());
  // One thread's cycles vary, but stay under 1.2 times the pool's 3.0: no retime.
  CHECK(feed(tuner, 60, speeds(3.0, 3.5)) == 60);
  // The load leaves: nothing is timed until the hold ends (100 cycles from the choice), when one thread
  // (4 cycles) and then the pool (1 settling + 4) are timed and the pool wins.
  CHECK(feed(tuner, 40 + 4, speeds(0.5, 0.9)) == 44);
  CHECK_FALSE(tuner.mode());
  CHECK(feed(tuner, 5, speeds(0.5, 0.9)) == 0);
  CHECK_FALSE(tuner.mode());
  CHECK(feed(tuner, 60, speeds(0.5, 0.9)) == 0);
}

TEST_CASE("mode tuner: a cycle interrupted now and then is no change of speed", "[core][tuner]") {
  ModeTunerOptions options = kOptions;
  options.retime_ratio = 1.5;
  ModeTuner tuner(options, nullptr);
  feed(tuner, 9, speeds(1.0, 2.0));
  REQUIRE_FALSE(tuner.mode());
  // One held cycle in four takes 10 times as long (the scheduler ran something else meanwhile): each
  // window's mean (3.25) passes 1.5 times one thread's 2.0, its median (1.0) does not, and the pool stays
  // held without being timed again.
  int cycle = 0;
  CHECK(feed(tuner, 80, [&](bool one_thread) { return one_thread ? 2.0 : (++cycle % 4 == 0 ? 10.0 : 1.0); }) == 0);
}

TEST_CASE("mode tuner: without a retime_ratio a hold runs its course", "[core][tuner]") {
  ModeTuner tuner(kOptions, nullptr);
  feed(tuner, 9, speeds(1.0, 2.0));
  REQUIRE_FALSE(tuner.mode());
  // The load of the case above arrives, but the pool is held to the end of min_hold (100 cycles) and only
  // then timed again.
  CHECK(feed(tuner, 100, speeds(3.0, 1.5)) == 0);
  CHECK(feed(tuner, 4, speeds(3.0, 1.5)) == 0);
  CHECK(tuner.mode());
}
