// Dataset.shuffle: uniform permutations from a full buffer (chi-square over many seeds), seed
// reproducibility, reshuffling per pass, and the locality of a small buffer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "tests/data/data_testing.h"

using namespace ember;
using data::Dataset;
using ember::testing::iota64;
using ember::testing::scalars;

namespace {

constexpr int64_t kN = 8;
// Chi-square of an n x n position-frequency table over `passes` permutations has (n-1)^2 = 49 degrees of
// freedom; P(chi2 > 90) is below 1e-4. The seeds are fixed, so the result is too.
constexpr double kChi2Limit = 90;

struct Table {
  std::vector<std::vector<int>> counts = std::vector<std::vector<int>>(kN, std::vector<int>(kN, 0));
  int passes = 0;
  void add(const std::vector<int64_t>& order) {
    REQUIRE(static_cast<int64_t>(order.size()) == kN);
    for (int64_t pos = 0; pos < kN; ++pos) ++counts[static_cast<size_t>(order[static_cast<size_t>(pos)])][static_cast<size_t>(pos)];
    ++passes;
  }
  double chi2() const {
    const double expected = static_cast<double>(passes) / kN;
    double s = 0;
    for (const auto& row : counts)
      for (int c : row) s += (c - expected) * (c - expected) / expected;
    return s;
  }
};

bool is_permutation_of_range(std::vector<int64_t> v, int64_t n) {
  std::sort(v.begin(), v.end());
  return v == iota64(n);
}

}  // namespace

TEST_CASE("data: a full shuffle buffer gives uniform positions over many seeds", "[data][shuffle]") {
  Table full, small;
  for (uint64_t seed = 0; seed < 1600; ++seed) {
    std::vector<int64_t> order = scalars(Dataset::range(kN).shuffle(kN, {.seed = seed}));
    REQUIRE(is_permutation_of_range(order, kN));
    full.add(order);
    small.add(scalars(Dataset::range(kN).shuffle(2, {.seed = seed})));
  }
  INFO("chi2 full buffer " << full.chi2() << ", buffer of 2 " << small.chi2());
  CHECK(full.chi2() < kChi2Limit);
  // The statistic can fail: a buffer of 2 keeps elements near their place, far from uniform.
  CHECK(small.chi2() > 10 * kChi2Limit);
}

TEST_CASE("data: passes of one seeded dataset reshuffle uniformly", "[data][shuffle]") {
  Dataset ds = Dataset::range(kN).shuffle(100, {.seed = 7});
  Table t;
  for (int pass = 0; pass < 1600; ++pass) t.add(scalars(ds));
  INFO("chi2 " << t.chi2());
  CHECK(t.chi2() < kChi2Limit);
}

TEST_CASE("data: a fixed seed reproduces, passes reshuffle unless told not to", "[data][shuffle]") {
  Dataset a = Dataset::range(100).shuffle(100, {.seed = 42});
  Dataset b = Dataset::range(100).shuffle(100, {.seed = 42});
  const std::vector<int64_t> a1 = scalars(a), a2 = scalars(a);
  CHECK(a1 == scalars(b));  // same seed, same first pass
  CHECK(a2 == scalars(b));  // and the same sequence of passes
  CHECK(a1 != a2);
  CHECK(a1 != iota64(100));
  CHECK(is_permutation_of_range(a2, 100));
  CHECK(a1 != scalars(Dataset::range(100).shuffle(100, {.seed = 43})));

  Dataset fixed = Dataset::range(100).shuffle(100, {.seed = 42, .reshuffle_each_iteration = false});
  const std::vector<int64_t> f1 = scalars(fixed);
  CHECK(f1 == scalars(fixed));
  CHECK(f1 != iota64(100));

  // Through repeat: each epoch of shuffle().repeat() is a fresh permutation, or the same one.
  std::vector<int64_t> epochs = scalars(Dataset::range(20).shuffle(20, {.seed = 1}).repeat(2));
  CHECK(std::vector<int64_t>(epochs.begin(), epochs.begin() + 20) != std::vector<int64_t>(epochs.begin() + 20, epochs.end()));
  std::vector<int64_t> same =
      scalars(Dataset::range(20).shuffle(20, {.seed = 1, .reshuffle_each_iteration = false}).repeat(2));
  CHECK(std::vector<int64_t>(same.begin(), same.begin() + 20) == std::vector<int64_t>(same.begin() + 20, same.end()));
}

TEST_CASE("data: an unseeded shuffle follows the global seed", "[data][shuffle]") {
  random::set_seed(1234);
  const std::vector<int64_t> a = scalars(Dataset::range(50).shuffle(50));
  random::set_seed(1234);
  const std::vector<int64_t> b = scalars(Dataset::range(50).shuffle(50));
  CHECK(a == b);
  CHECK(is_permutation_of_range(a, 50));
  CHECK(a != scalars(Dataset::range(50).shuffle(50)));  // the next op seed of the sequence
}

TEST_CASE("data: a small buffer keeps tf.data's locality", "[data][shuffle]") {
  // Before output k the buffer has read inputs 0 .. k + b - 1, so input i leaves no earlier than
  // position i - b + 1; later is unbounded. The bound is reached.
  constexpr int64_t n = 500, b = 10;
  int64_t tightest = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::vector<int64_t> order = scalars(Dataset::range(n).shuffle(b, {.seed = seed}));
    REQUIRE(is_permutation_of_range(order, n));
    std::vector<int64_t> pos(n);
    for (int64_t k = 0; k < n; ++k) pos[static_cast<size_t>(order[static_cast<size_t>(k)])] = k;
    for (int64_t i = 0; i < n; ++i) {
      INFO("seed " << seed << ": input " << i << " at position " << pos[static_cast<size_t>(i)]);
      REQUIRE(pos[static_cast<size_t>(i)] >= i - b + 1);
      tightest = std::min(tightest, pos[static_cast<size_t>(i)] - i);
    }
    CHECK(order[0] < b);  // the first element comes from the first buffer-full
  }
  CHECK(tightest == -(b - 1));
  CHECK(scalars(Dataset::range(30).shuffle(1, {.seed = 5})) == iota64(30));  // a buffer of 1 is the identity
  CHECK_THROWS_AS(Dataset::range(3).shuffle(0), InvalidArgument);
}

TEST_CASE("data: get_state/set_state carry the shuffles' passes to a copy of the pipeline", "[data][shuffle]") {
  auto pipeline = [] {
    return Dataset::zip({Dataset::range(30).shuffle(30, {.seed = 5}), Dataset::range(30).shuffle(10, {.seed = 6})})
        .map([](const data::Element& e) { return e; })
        .batch(7)
        .prefetch(2);
  };
  auto pass = [](const Dataset& d) {
    std::vector<int64_t> out;
    for (const data::Element& e : d)
      for (const Tensor& t : e)
        for (int64_t v : t.to_vector<int64_t>()) out.push_back(v);
    return out;
  };
  Dataset a = pipeline();
  CHECK(a.get_state() == std::vector<uint64_t>{0, 0});
  for (int i = 0; i < 3; ++i) pass(a);
  const std::vector<uint64_t> state = a.get_state();
  CHECK(state == std::vector<uint64_t>{3, 3});
  // A new pipeline (a restarted process) continues with a's fourth and fifth passes, not its first.
  Dataset b = pipeline();
  const std::vector<int64_t> b_first = pass(pipeline());
  b.set_state(state);
  for (int i = 0; i < 2; ++i) {
    const std::vector<int64_t> pa = pass(a), pb = pass(b);
    CHECK(pa == pb);
    CHECK(pa != b_first);
  }
  CHECK_THROWS_AS(Dataset::range(3).set_state({1}), InvalidArgument);
}
