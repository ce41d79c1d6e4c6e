// The threaded stages: parallel map order (deterministic or not), prefetch overlap, AUTOTUNE's choice
// between background threads and the reader's thread, errors carried to the consumer with the element's
// index, and prompt, complete shutdown when a pass is left early.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "data/autotune.h"
#include "tests/data/data_testing.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using data::Dataset;
using data::Element;
using ember::testing::all_equal;
using ember::testing::iota64;
using ember::testing::scalars;
using ember::testing::seconds_since;
using Clock = std::chrono::steady_clock;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// A map function that sleeps `ms` (longer for element `slow`) and returns its input.
auto sleeper(int ms, int64_t slow = -1, int slow_ms = 0) {
  return [=](const Tensor& x) {
    sleep_ms(x.item<int64_t>() == slow ? slow_ms : ms);
    return x;
  };
}

// A map function that throws `E` on element `bad`.
template <class E>
auto thrower(int64_t bad) {
  return [bad](const Tensor& x) {
    if (x.item<int64_t>() == bad) throw E("bad element " + std::to_string(bad));
    return x;
  };
}

// Reads a pass until it throws; returns what came before and the error's message.
template <class E>
std::pair<std::vector<int64_t>, std::string> read_until_error(const Dataset& ds) {
  std::vector<int64_t> got;
  data::Iterator it = ds.make_iterator();
  std::string message;
  try {
    while (auto e = it.next()) got.push_back((*e)[0].item<int64_t>());
    FAIL("the pass ended without an error");
  } catch (const E& e) {
    message = e.what();
  }
  CHECK_FALSE(it.next().has_value());  // finished, not hung
  return {got, message};
}

// Threads of the process once the OpenMP pool and the allocator are warm.
int baseline_threads() {
  config::get_intra_op_parallelism_threads();  // the OpenMP pool exists before counting, whoever starts it
  scalars(Dataset::range(4).map([](const Tensor& x) { return x; }, {.num_parallel_calls = 2}).prefetch(2));
  // The threads that pass joined can still be listed in /proc for a moment (longer on a loaded machine):
  // the baseline is the count once it has held still for 50 ms.
  int n = testing::thread_count();
  for (int steady = 0, polls = 0; steady < 50 && polls < 3000; ++polls) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int now = testing::thread_count();
    steady = now == n ? steady + 1 : 0;
    n = now;
  }
  return n;
}

}  // namespace

TEST_CASE("data: parallel map keeps input order when deterministic", "[data][parallel]") {
  // Element 0 is slow: the others finish first, yet come out after it.
  Dataset ds = Dataset::range(40).map(sleeper(1, 0, 60), {.num_parallel_calls = 4});
  CHECK(ds.cardinality() == 40);
  CHECK(scalars(ds) == iota64(40));
  CHECK(scalars(Dataset::range(300).map([](const Tensor& x) { return x; }, {.num_parallel_calls = data::AUTOTUNE})) ==
        iota64(300));
  // A repeat of a parallel map restarts the workers each pass.
  CHECK(scalars(Dataset::range(10).map(sleeper(0), {.num_parallel_calls = 3}).repeat(3)).size() == 30);
}

TEST_CASE("data: parallel map without determinism yields each element once, finished ones first", "[data][parallel]") {
  Dataset ds = Dataset::range(40).map(sleeper(1, 0, 150), {.num_parallel_calls = 4, .deterministic = false});
  std::vector<int64_t> got = scalars(ds);
  std::vector<int64_t> sorted = got;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == iota64(40));
  CHECK(got.front() != 0);  // the slow element did not hold the others back
}

TEST_CASE("data: AUTOTUNE runs one call per usable CPU at once", "[data][parallel]") {
  std::atomic<int> running{0}, peak{0};
  auto fn = [&](const Tensor& x) {
    int now = ++running;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    sleep_ms(20);
    --running;
    return x;
  };
  const int cores = static_cast<int>(data::autotune_parallelism());
  CHECK(cores >= 1);
  CHECK(cores <= static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  CHECK(scalars(Dataset::range(3 * cores).map(fn, {.num_parallel_calls = data::AUTOTUNE})) == iota64(3 * cores));
  CHECK(peak.load() == cores);
  peak = 0;
  CHECK(scalars(Dataset::range(12).map(fn, {.num_parallel_calls = 3})).size() == 12);
  CHECK(peak.load() == 3);
  CHECK_THROWS_AS(Dataset::range(3).map(fn, {.num_parallel_calls = -2}), InvalidArgument);
}

TEST_CASE("data: a pipeline function's ops run on its worker thread alone", "[data][parallel]") {
  // As tf.data (max_intra_op_parallelism 1): an op big enough to split over the intra-op pool would, on a
  // worker, start an OpenMP team of that worker's own, a thread that outlives the op.
  config::set_intra_op_parallelism_threads(2);
  std::atomic<int> grew{0}, calls{0};
  auto fn = [&](const Tensor& x) {
    const int before = ember::testing::thread_count();
    Tensor big = ops::cast(ops::full(Shape{1 << 20}, 3, DType::UInt8), DType::Float32) * 0.5f;
    if (ember::testing::thread_count() != before) ++grew;
    ++calls;
    CHECK(big.shape() == Shape{1 << 20});
    return x;
  };
  CHECK(scalars(Dataset::range(4).map(fn).prefetch(1)) == iota64(4));  // on the prefetch thread
  CHECK(scalars(Dataset::range(4).map(fn, {.num_parallel_calls = 1})) == iota64(4));  // on a map worker
  CHECK(calls.load() == 8);
  CHECK(grew.load() == 0);
  config::set_intra_op_parallelism_threads(0);
}

TEST_CASE("data: prefetch overlaps the producer with the consumer", "[data][parallel]") {
  // 15 steps of 20 ms on each side: about 300 ms overlapped, 600 ms in sequence.
  auto run = [](const Dataset& ds) {
    const auto t0 = Clock::now();
    int n = 0;
    for (const Element& e : ds) {
      (void)e;
      sleep_ms(20);
      ++n;
    }
    CHECK(n == 15);
    return seconds_since(t0);
  };
  Dataset producer = Dataset::range(15).map(sleeper(20));
  const double overlapped = run(producer.prefetch(2)), autotuned = run(producer.prefetch(data::AUTOTUNE));
  INFO("prefetch(2) " << overlapped << " s, AUTOTUNE " << autotuned << " s (sequential would be 0.6 s)");
  CHECK(overlapped < 0.45);
  CHECK(autotuned < 0.45);
  CHECK(scalars(Dataset::range(100).prefetch(3)) == iota64(100));
  CHECK(scalars(Dataset::range(10).prefetch(0)) == iota64(10));
  CHECK_THROWS_AS(Dataset::range(3).prefetch(-3), InvalidArgument);
}

TEST_CASE("data: AUTOTUNE's tuner keeps the mode whose reader cycles are shorter on average", "[data][parallel]") {
  using T = data::detail::ProductionTuner;
  T tuner;
  tuner.add_stage();
  // Feeds cycles of `background` or `here` seconds by the current mode; returns the cycles at which it changed.
  int64_t cycle = 0;
  auto feed = [&](int64_t n, double background, double here) {
    std::vector<std::pair<int64_t, bool>> switches;
    for (int64_t i = 0; i < n; ++i) {
      const bool before = tuner.produce_inline();
      tuner.add_cycle(before ? here : background);
      ++cycle;
      if (tuner.produce_inline() != before) switches.emplace_back(cycle, tuner.produce_inline());
    }
    std::string seen;
    for (auto [c, m] : switches) seen += " " + std::to_string(c) + (m ? ":inline" : ":background");
    UNSCOPED_INFO("switches:" << seen);
    return switches;
  };
  CHECK_FALSE(tuner.produce_inline());  // the background first, as tf.data
  using S = std::vector<std::pair<int64_t, bool>>;
  // Cycles of 5 ms against 1 ms: the slower mode, timed second, has lost after this many (its sum then
  // passes the other's whole window), and the round ends there.
  const int64_t lose = T::kWindow / 5 + 1;
  const int64_t round = 2 * (T::kSettle + T::kWindow);  // the first: settle, time the background, settle, time inline
  CHECK(feed(round + T::kMinHold, 5e-3, 1e-3) == S{{T::kSettle + T::kWindow, true}});  // inline is timed and kept
  // After the hold: inline timed again (the hold settled it), the background tried and cut short, inline kept
  // for twice as long.
  int64_t at = cycle + T::kWindow;
  CHECK(feed(T::kWindow + T::kSettle + lose + 2 * T::kMinHold, 5e-3, 1e-3) ==
        S{{at, false}, {at + T::kSettle + lose, true}});
  // Now the background is faster: the next round takes it back, with the hold reset.
  at = cycle + T::kWindow;
  const int64_t kept = at + T::kSettle + T::kWindow + T::kMinHold + T::kWindow;  // background timed again: inline tried
  CHECK(feed(kept + T::kSettle + lose - cycle, 1e-3, 5e-3) == S{{at, false}, {kept, true}, {kept + T::kSettle + lose, false}});
  // Without an AUTOTUNE stage nothing is timed.
  T idle;
  for (int i = 0; i < 1000; ++i) idle.element_done();
  CHECK_FALSE(idle.produce_inline());
}

namespace {
// range(n).map(AUTOTUNE).prefetch(AUTOTUNE) (or explicit numbers) whose map records the thread that made
// each element (and throws on element `bad`).
struct ThreadRecordingPipeline {
  std::shared_ptr<std::vector<std::thread::id>> made_by;  // one writer per element, read after it arrives
  Dataset ds;
  ThreadRecordingPipeline(int64_t n, bool autotune, int64_t bad = -1)
      : made_by(std::make_shared<std::vector<std::thread::id>>(static_cast<size_t>(n))), ds(Dataset::range(0)) {
    auto fn = [made_by = made_by, bad](const Tensor& x) {
      const int64_t i = x.item<int64_t>();
      if (i == bad) throw std::runtime_error("bad element " + std::to_string(bad));
      (*made_by)[static_cast<size_t>(i)] = std::this_thread::get_id();
      return x;
    };
    const int64_t calls = autotune ? data::AUTOTUNE : 2, depth = autotune ? data::AUTOTUNE : 2;
    ds = Dataset::range(n).map(fn, {.num_parallel_calls = calls}).prefetch(depth);
  }
  // One pass that spends 1 ms on each element made on `slow_when_here ? the reader's : another` thread;
  // whether the reader's thread made each element.
  std::vector<bool> read(bool slow_when_here) const {
    std::vector<bool> here;
    for (const Element& e : ds) {
      const int64_t i = e[0].item<int64_t>();
      REQUIRE(i == static_cast<int64_t>(here.size()));  // input order through every switch
      here.push_back((*made_by)[static_cast<size_t>(i)] == std::this_thread::get_id());
      if (here.back() == slow_when_here) sleep_ms(1);
    }
    return here;
  }
};
}  // namespace

TEST_CASE("data: AUTOTUNE stages hand production to the reader's thread when that is faster, and back",
          "[data][parallel]") {
  using T = data::detail::ProductionTuner;
  const int before = baseline_threads();
  const size_t first = T::kSettle + T::kWindow, decided = 2 * (T::kSettle + T::kWindow);
  // Elements made in the background cost the reader 1 ms: the stages hand over and stay handed over.
  const ThreadRecordingPipeline faster_here(400, true);
  std::vector<bool> here = faster_here.read(false);
  REQUIRE(here.size() == 400);
  CHECK(all_equal(here, 0, first, false));
  CHECK(all_equal(here, decided, 400, true));
  // The dataset remembers: its next pass (fit's next epoch) starts on the reader's thread.
  here = faster_here.read(false);
  CHECK(all_equal(here, 0, 400, true));
  // Elements made on the reader's thread cost it 1 ms: tried, then given back to the threads.
  here = ThreadRecordingPipeline(400, true).read(true);
  REQUIRE(here.size() == 400);
  CHECK(all_equal(here, 0, first, false));
  CHECK(std::count(here.begin() + first, here.begin() + decided, true) > 0);
  CHECK(all_equal(here, decided + 32, 400, false));
  // Explicit numbers always run in the background.
  here = ThreadRecordingPipeline(300, false).read(false);
  CHECK(all_equal(here, 0, 300, false));
  // An error on the reader's thread names the map and the element, as a worker's would.
  std::string message;
  try {
    ThreadRecordingPipeline(400, true, 350).read(false);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("Dataset.map: the map function failed on element 350") &&
                          Catch::Contains("bad element 350"));
  CHECK(testing::thread_count_settles_to(before));
}

TEST_CASE("data: a full prefetch buffer or parallel map queue is refilled once it has drained to half",
          "[data][parallel]") {
  // Each wake-up of a producer costs tens of microseconds on a VM: it should buy half a buffer of elements.
  // Both stages below hold 4 elements: prefetch(4), and 2 map workers (2 x 2 queued slots).
  for (bool parallel_map : {false, true}) {
    INFO((parallel_map ? "map with 2 parallel calls" : "prefetch(4)"));
    std::atomic<int> made{0};
    const Dataset counted = Dataset::range(100).map(
        [&](const Tensor& x) {
          ++made;
          return x;
        },
        {.num_parallel_calls = parallel_map ? 2 : 0});
    data::Iterator it = (parallel_map ? counted : counted.prefetch(4)).make_iterator();
    // How many elements the stage has made once it had time to reach `n` (and room for one too many).
    auto made_by = [&](int n) {
      const auto t0 = Clock::now();
      while (made.load() < n && seconds_since(t0) < 10) sleep_ms(1);
      sleep_ms(200);
      return made.load();
    };
    // The first element may be taken before the stage filled its buffer (then refilled to 4) or after.
    CHECK(it.next()->at(0).item<int64_t>() == 0);
    const int first = made_by(4);
    REQUIRE((first == 4 || first == 5));
    int buffered = first - 1;
    for (int64_t taken = 1; taken <= 8; ++taken) {
      CHECK(it.next()->at(0).item<int64_t>() == taken);
      if (--buffered <= 2) buffered = 4;  // drained to half: refilled; with 3 left the stage sleeps on
      CHECK(made_by(static_cast<int>(taken) + 1 + buffered) == taken + 1 + buffered);
    }
    for (int64_t i = 9; i < 100; ++i) REQUIRE(it.next()->at(0).item<int64_t>() == i);
    CHECK_FALSE(it.next().has_value());
  }
}

TEST_CASE("data: a map error reaches the consumer at its element, naming map and index", "[data][parallel]") {
  for (int64_t calls : {int64_t{0}, int64_t{1}, int64_t{4}}) {
    INFO("num_parallel_calls " << calls);
    auto [got, msg] = read_until_error<InvalidArgument>(
        Dataset::range(50).map(thrower<InvalidArgument>(17), {.num_parallel_calls = calls}));
    CHECK(got == iota64(17));
    CHECK_THAT(msg, Catch::Contains("Dataset.map") && Catch::Contains("element 17") &&
                        Catch::Contains("bad element 17"));
  }
  // A foreign exception type becomes an ember::Error; through a prefetch it keeps its position.
  auto [got, msg] = read_until_error<Error>(
      Dataset::range(30).map(thrower<std::runtime_error>(9), {.num_parallel_calls = 2}).prefetch(4));
  CHECK(got == iota64(9));
  CHECK_THAT(msg, Catch::Contains("Dataset.map") && Catch::Contains("element 9"));
  // Without determinism the error still arrives, after some subset of the other elements.
  auto [any, msg2] = read_until_error<OutOfRange>(
      Dataset::range(30).map(thrower<OutOfRange>(5), {.num_parallel_calls = 3, .deterministic = false}));
  CHECK(any.size() < 30);
  CHECK_THAT(msg2, Catch::Contains("element 5"));
}

TEST_CASE("data: generator and filter errors name their transformation and index", "[data][parallel]") {
  Dataset gen = Dataset::from_generator([] {
    return [i = int64_t{0}]() mutable -> std::optional<Element> {
      if (i == 6) throw FailedPrecondition("generator broke");
      return Element{Tensor::scalar<int64_t>(i++)};
    };
  });
  auto [got, msg] = read_until_error<FailedPrecondition>(gen.prefetch(2));
  CHECK(got == iota64(6));
  CHECK_THAT(msg, Catch::Contains("Dataset.from_generator") && Catch::Contains("element 6") &&
                      Catch::Contains("generator broke"));
  // The map downstream of a failing generator passes the generator's error on unchanged.
  auto [got2, msg2] = read_until_error<FailedPrecondition>(gen.map(sleeper(0), {.num_parallel_calls = 2}));
  CHECK(got2 == iota64(6));
  CHECK_THAT(msg2, Catch::Contains("Dataset.from_generator") && !Catch::Contains("Dataset.map"));

  auto [got3, msg3] = read_until_error<Error>(Dataset::range(10).filter([](const Tensor& x) {
    if (x.item<int64_t>() == 4) throw std::logic_error("predicate broke");
    return true;
  }));
  CHECK(got3 == iota64(4));
  CHECK_THAT(msg3, Catch::Contains("Dataset.filter") && Catch::Contains("element 4"));
}

TEST_CASE("data: leaving a pass early stops slow producers promptly and joins every thread", "[data][parallel]") {
  const int before = baseline_threads();
  // Slow workers (50 ms per element), buffers that fill up, nested threaded stages, an endless input.
  Dataset slow = Dataset::range(0, 1000000)
                     .repeat()
                     .map(sleeper(50), {.num_parallel_calls = 4})
                     .prefetch(2)
                     .map([](const Tensor& x) { return x; }, {.num_parallel_calls = 2})
                     .prefetch(data::AUTOTUNE);
  auto t0 = Clock::now();
  int seen = 0;
  for (const Element& e : slow) {
    (void)e;
    if (++seen == 3) break;
  }
  CHECK(seen == 3);
  INFO("break after 3 elements took " << seconds_since(t0) << " s; threads before " << before);
  CHECK(seconds_since(t0) < 1.5);
  CHECK(testing::thread_count_settles_to(before));

  // An iterator destroyed while its producers sit blocked on full buffers.
  t0 = Clock::now();
  {
    data::Iterator it = Dataset::range(100).map(sleeper(5), {.num_parallel_calls = 2}).prefetch(2).make_iterator();
    CHECK(it.next().has_value());
    sleep_ms(100);  // every buffer fills; the workers wait for space
    CHECK(testing::thread_count() > before);
  }
  CHECK(seconds_since(t0) < 1.0);
  CHECK(testing::thread_count_settles_to(before));

  // The Dataset goes first, then the pass: the pass keeps what it needs.
  std::optional<data::Iterator> it;
  {
    Dataset temp = Dataset::range(50).map(sleeper(1), {.num_parallel_calls = 2}).prefetch(4);
    it.emplace(temp.make_iterator());
  }
  CHECK((*it->next())[0].item<int64_t>() == 0);
  it.reset();
  CHECK(testing::thread_count_settles_to(before));

  // A slow generator behind a prefetch.
  t0 = Clock::now();
  Dataset gen = Dataset::from_generator([] {
    return [i = int64_t{0}]() mutable -> std::optional<Element> {
      sleep_ms(30);
      return Element{Tensor::scalar<int64_t>(i++)};
    };
  });
  for (const Element& e : gen.prefetch(4)) {
    (void)e;
    break;
  }
  CHECK(seconds_since(t0) < 1.0);
  CHECK(testing::thread_count_settles_to(before));

  // After an error the pass's threads are gone as well.
  {
    data::Iterator err = Dataset::range(100).map(thrower<InvalidArgument>(2), {.num_parallel_calls = 3}).prefetch(2).make_iterator();
    err.next();
    err.next();
    CHECK_THROWS_AS(err.next(), InvalidArgument);
    CHECK(testing::thread_count_settles_to(before));
  }
}

TEST_CASE("data: concurrent passes over one dataset are independent", "[data][parallel]") {
  Dataset ds = Dataset::range(200).map(sleeper(0), {.num_parallel_calls = 2}).cache().prefetch(4);
  std::vector<int64_t> a, b;
  std::thread other([&] { a = scalars(ds); });
  b = scalars(ds);
  other.join();
  CHECK(a == iota64(200));
  CHECK(b == iota64(200));
  CHECK(scalars(ds) == iota64(200));
}
