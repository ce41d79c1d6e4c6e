// Random ops: the Philox generator against Random123's known answers, TF 2's seed rules, independence
// from the thread count, sample statistics, dtypes and errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "framework/core/philox.h"
#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::values_as_double;

namespace {

constexpr DType kFloatTypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

struct Moments {
  double mean, stddev, min, max;
};
Moments moments(const Tensor& t) {
  std::vector<double> v = values_as_double(t);
  double sum = std::accumulate(v.begin(), v.end(), 0.0);
  double mean = sum / static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - mean) * (x - mean);
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {mean, std::sqrt(sq / static_cast<double>(v.size())), *lo, *hi};
}

bool same_values(const Tensor& a, const Tensor& b) { return values_as_double(a) == values_as_double(b); }

// Philox key of a (global, op) seed pair: TF's two 31-bit seeds side by side.
uint64_t key_of(uint64_t global_seed, uint64_t op_seed) { return global_seed | (op_seed << 32); }

// Restores the intra-op thread count when a test changes it.
struct ThreadCountGuard {
  int saved = config::get_intra_op_parallelism_threads();
  ~ThreadCountGuard() { config::set_intra_op_parallelism_threads(saved); }
};

}  // namespace

// Runs first: the global seed can be set but not unset, and later cases set it.
TEST_CASE("random without a global seed", "[ops][random]") {
  SECTION("neither seed: nondeterministic draws") {
    Tensor a = random::uniform({64}), b = random::uniform({64});
    CHECK_FALSE(same_values(a, b));
  }
  SECTION("op seed only: TF's default global seed 87654321, a fresh draw per call") {
    Tensor a = random::uniform({8}, {.seed = 5});
    Tensor b = random::uniform({8}, {.seed = 5});
    std::vector<float> va = a.to_vector<float>(), vb = b.to_vector<float>();
    for (int i = 0; i < 8; ++i) {
      philox::Uint4 first = philox::block(key_of(87654321, 5), static_cast<uint64_t>(i / 4));
      philox::Uint4 second = philox::block(key_of(87654321, 5), static_cast<uint64_t>(2 + i / 4));
      CHECK(va[static_cast<size_t>(i)] == philox::uint32_to_float(first.v[i % 4]));
      CHECK(vb[static_cast<size_t>(i)] == philox::uint32_to_float(second.v[i % 4]));
    }
  }
}

TEST_CASE("philox4x32-10 matches Random123's known answers", "[ops][random]") {
  auto run = [](philox::Uint4 c, philox::Key2 k) { return philox::philox4x32_10(c, k); };
  auto check = [](philox::Uint4 got, std::array<uint32_t, 4> want) {
    for (int i = 0; i < 4; ++i) CHECK(got.v[i] == want[static_cast<size_t>(i)]);
  };
  check(run({{0, 0, 0, 0}}, {{0, 0}}), {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  check(run({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, {{0xffffffff, 0xffffffff}}),
        {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  check(run({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, {{0xa4093822, 0x299f31d0}}),
        {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
  // The 64-bit helpers split words least significant first.
  check(philox::block(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull),
        {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("philox::blocks computes block()'s words for a batch, across a carry into the counter's high word",
          "[ops][random]") {
  for (uint64_t first : {uint64_t{0}, (uint64_t{1} << 32) - 5, ~uint64_t{0} - 3}) {
    for (int n : {1, 7, 16, 17, philox::kBatchBlocks}) {
      uint32_t words[4 * philox::kBatchBlocks];
      philox::blocks(0x299f31d0a4093822ull, first, n, words);
      for (int i = 0; i < n; ++i) {
        const philox::Uint4 want = philox::block(0x299f31d0a4093822ull, first + static_cast<uint64_t>(i));
        for (int j = 0; j < 4; ++j) CHECK(words[4 * i + j] == want.v[j]);
      }
    }
  }
  // A uniform float output longer than a batch, from an odd offset of the stream: element i is word i % 4 of
  // block counter + i / 4, scaled by one fused multiply-add (so its values are TF's).
  random::set_seed(1);
  const std::vector<float> u = random::uniform({1001}, {.minval = -2, .maxval = 3, .seed = 9}).to_vector<float>();
  const philox::Uint4 last = philox::block(key_of(1, 9), 1000 / 4);
  CHECK(u[1000] == std::fma(philox::uint32_to_float(last.v[0]), 5.0f, -2.0f));
  const philox::Uint4 mid = philox::block(key_of(1, 9), 517 / 4);
  CHECK(u[517] == std::fma(philox::uint32_to_float(mid.v[1]), 5.0f, -2.0f));
}

TEST_CASE("philox word conversions follow TF", "[ops][random]") {
  CHECK(philox::uint32_to_float(0) == 0.0f);
  CHECK(philox::uint32_to_float(0x7fffff) == 1.0f - std::ldexp(1.0f, -23));
  CHECK(philox::uint32_to_float(0xff800000u) == 0.0f);  // only the low 23 bits count
  CHECK(philox::uint32_to_float(0x400000) == 0.5f);
  CHECK(philox::uint64_to_double(0xfff00000u, 0) == 0.0);
  CHECK(philox::uint64_to_double(0x80000, 0) == 0.5);
  CHECK(philox::uint64_to_double(0xfffff, 0xffffffffu) == 1.0 - std::ldexp(1.0, -52));
  CHECK(philox::uint32_to_half_uniform(0x3ff) == 1023.0f / 1024);
  CHECK(philox::uint32_to_bfloat16_uniform(0xffffff80u) == 0.0f);
  float f0, f1;
  philox::box_muller_float(0, 0, f0, f1);  // u1 clamps to 1e-7: radius sqrt(-2 log 1e-7), angle 0
  CHECK(f0 == 0.0f);
  CHECK(f1 == Approx(std::sqrt(-2.0 * std::log(1e-7))).epsilon(1e-6));
  philox::box_muller_float(0x400000, 0x200000, f0, f1);  // u1 = 0.5, angle pi/2
  CHECK(f0 == Approx(std::sqrt(-2.0 * std::log(0.5))).epsilon(1e-6));
  CHECK(std::abs(f1) < 1e-6);
}

TEST_CASE("random: element i comes from Philox block counter + i / per_block", "[ops][random]") {
  random::set_seed(1);
  std::vector<double> d = random::uniform({6}, {.dtype = DType::Float64, .seed = 2}).to_vector<double>();
  for (int i = 0; i < 6; ++i) {
    philox::Uint4 b = philox::block(key_of(1, 2), static_cast<uint64_t>(i / 2));
    CHECK(d[static_cast<size_t>(i)] == philox::uint64_to_double(b.v[2 * (i % 2)], b.v[2 * (i % 2) + 1]));
  }
  // The pair's next call starts after the 3 blocks the first one used.
  std::vector<float> n = random::normal({4}, {.seed = 2}).to_vector<float>();
  philox::Uint4 b = philox::block(key_of(1, 2), 3);
  float z[4];
  philox::box_muller_float(b.v[0], b.v[1], z[0], z[1]);
  philox::box_muller_float(b.v[2], b.v[3], z[2], z[3]);
  for (int i = 0; i < 4; ++i) CHECK(n[static_cast<size_t>(i)] == z[i]);
}

// The scaling is one fused multiply-add on every build and device (CUDA's kernels spell it out too), so a
// seed gives the same values whether or not the compiler would fuse u * range + lo on its own.
TEST_CASE("random: values are scaled with one fused multiply-add", "[ops][random]") {
  random::set_seed(3);
  const int n = 4096;
  const float lo = 0.1f, hi = 2.7f, range = hi - lo;
  std::vector<float> u = random::uniform({n}, {.minval = lo, .maxval = hi, .seed = 4}).to_vector<float>();
  const float mean = 0.3f, stddev = 1.7f;
  std::vector<float> z = random::normal({n}, {.mean = mean, .stddev = stddev, .seed = 5}).to_vector<float>();
  int fused_differs = 0;
  for (int i = 0; i < n; ++i) {
    const philox::Uint4 b = philox::block(key_of(3, 4), static_cast<uint64_t>(i / 4));
    const float x = philox::uint32_to_float(b.v[i % 4]);
    INFO("element " << i);
    CHECK(u[static_cast<size_t>(i)] == std::fma(x, range, lo));
    volatile float product = x * range;  // rounded on its own: the unfused form
    fused_differs += std::fma(x, range, lo) != product + lo;
  }
  CHECK(fused_differs > 0);  // the two forms do differ here, so the check above tells them apart
  for (int i = 0; i < n; i += 4) {
    const philox::Uint4 b = philox::block(key_of(3, 5), static_cast<uint64_t>(i / 4));
    float w[4];
    philox::box_muller_float(b.v[0], b.v[1], w[0], w[1]);
    philox::box_muller_float(b.v[2], b.v[3], w[2], w[3]);
    for (int j = 0; j < 4; ++j) CHECK(z[static_cast<size_t>(i + j)] == std::fma(w[j], stddev, mean));
  }
}

TEST_CASE("random seeds follow TF 2", "[ops][random]") {
  SECTION("global seed only: op seeds from a counter, the sequence repeats after set_seed") {
    random::set_seed(3);
    Tensor a1 = random::uniform({16}), a2 = random::normal({16});
    random::set_seed(3);
    Tensor b1 = random::uniform({16}), b2 = random::normal({16});
    CHECK(same_values(a1, b1));
    CHECK(same_values(a2, b2));
    Tensor a3 = random::uniform({16});
    CHECK_FALSE(same_values(a1, a3));
  }
  SECTION("both seeds: each call draws anew, the sequence repeats after set_seed") {
    random::set_seed(3);
    Tensor c1 = random::uniform({16}, {.seed = 9}), c2 = random::uniform({16}, {.seed = 9});
    CHECK_FALSE(same_values(c1, c2));
    random::set_seed(3);
    Tensor other = random::uniform({16}, {.seed = 10});  // another pair does not disturb this one
    Tensor d1 = random::uniform({16}, {.seed = 9}), d2 = random::uniform({16}, {.seed = 9});
    CHECK(same_values(c1, d1));
    CHECK(same_values(c2, d2));
    CHECK_FALSE(same_values(other, d1));
  }
  SECTION("the global seed changes the numbers of a fixed op seed") {
    random::set_seed(3);
    Tensor a = random::normal({16}, {.seed = 9});
    random::set_seed(4);
    Tensor b = random::normal({16}, {.seed = 9});
    CHECK_FALSE(same_values(a, b));
  }
  SECTION("seeds are taken modulo 2^31 - 1, as TF truncates them") {
    random::set_seed(3);
    Tensor a = random::uniform({8}, {.seed = 7});
    random::set_seed(3);
    Tensor b = random::uniform({8}, {.seed = 7 + 2147483647ull});
    CHECK(same_values(a, b));
  }
}

TEST_CASE("random results do not depend on the thread count", "[ops][random]") {
  ThreadCountGuard guard;
  const Shape shape{300001};  // large enough to be split, odd so the last block is partial
  auto draw_all = [&] {
    random::set_seed(11);
    std::vector<Tensor> out;
    for (DType t : kFloatTypes) {
      out.push_back(random::uniform(shape, {.dtype = t, .seed = 1}));
      out.push_back(random::normal(shape, {.dtype = t, .seed = 2}));
      out.push_back(random::truncated_normal(shape, {.dtype = t, .seed = 3}));
    }
    out.push_back(random::uniform(shape, {.minval = -5, .maxval = 5, .dtype = DType::Int32, .seed = 4}));
    out.push_back(random::uniform(shape, {.minval = -5, .maxval = 5, .dtype = DType::Int64, .seed = 4}));
    return out;
  };
  config::set_intra_op_parallelism_threads(1);
  std::vector<Tensor> one = draw_all();
  config::set_intra_op_parallelism_threads(2);
  std::vector<Tensor> two = draw_all();
  REQUIRE(one.size() == two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    INFO("draw " << i << " dtype " << one[i].dtype());
    CHECK(std::memcmp(one[i].raw_data(), two[i].raw_data(), one[i].nbytes()) == 0);
  }
}

TEST_CASE("random_uniform statistics and range", "[ops][random]") {
  random::set_seed(21);
  for (DType t : kFloatTypes) {
    INFO("dtype " << t);
    Tensor u = random::uniform({100000}, {.dtype = t});
    REQUIRE(u.dtype() == t);
    REQUIRE(u.shape() == Shape{100000});
    Moments m = moments(u);
    CHECK(m.min >= 0.0);
    CHECK(m.max < 1.0);
    // float16 and bfloat16 carry 10 and 7 random bits: their means are 1023/2048 and 127/256.
    const double expected_mean = t == DType::BFloat16 ? 127.0 / 256 : (t == DType::Float16 ? 1023.0 / 2048 : 0.5);
    CHECK(std::abs(m.mean - expected_mean) < 0.005);
    CHECK(std::abs(m.stddev - std::sqrt(1.0 / 12)) < 0.005);
    Tensor s = random::uniform({100000}, {.minval = -2, .maxval = 3, .dtype = t});
    Moments ms = moments(s);
    CHECK(ms.min >= -2.0);
    CHECK(ms.max < 3.0);
    CHECK(std::abs(ms.mean - (t == DType::BFloat16 ? 0.48 : 0.5)) < 0.03);
  }
  // float16 uniform values are multiples of 2^-10.
  for (double v : values_as_double(random::uniform({1000}, {.dtype = DType::Float16})))
    CHECK(v * 1024 == std::floor(v * 1024));
  // minval == maxval gives that value.
  for (double v : values_as_double(random::uniform({10}, {.minval = 2.5, .maxval = 2.5}))) CHECK(v == 2.5);
}

TEST_CASE("random_uniform integers cover [minval, maxval)", "[ops][random]") {
  random::set_seed(22);
  for (DType t : {DType::Int32, DType::Int64}) {
    INFO("dtype " << t);
    Tensor u = random::uniform({100000}, {.minval = -5, .maxval = 5, .dtype = t});
    REQUIRE(u.dtype() == t);
    std::map<int64_t, int64_t> counts;
    for (double v : values_as_double(u)) counts[static_cast<int64_t>(v)]++;
    REQUIRE(counts.size() == 10);
    CHECK(counts.begin()->first == -5);
    CHECK(counts.rbegin()->first == 4);
    for (auto [value, count] : counts) CHECK(std::abs(count - 10000) < 500);
  }
  // A range wider than the signed type's positive half still works (computed unsigned, as TF's SignedAdd).
  Tensor wide = random::uniform({1000}, {.minval = -2147483648.0, .maxval = 2147483647.0, .dtype = DType::Int32});
  Moments m = moments(wide);
  CHECK(m.min < -1e9);
  CHECK(m.max > 1e9);
  Tensor big = random::uniform({1000}, {.minval = -1e15, .maxval = 1e15, .dtype = DType::Int64});
  Moments mb = moments(big);
  CHECK(mb.min >= -1e15);
  CHECK(mb.max < 1e15);
  CHECK(mb.max - mb.min > 1e15);
}

TEST_CASE("random_normal statistics", "[ops][random]") {
  random::set_seed(23);
  for (DType t : kFloatTypes) {
    INFO("dtype " << t);
    Tensor n = random::normal({100000}, {.mean = 2, .stddev = 3, .dtype = t});
    REQUIRE(n.dtype() == t);
    Moments m = moments(n);
    const double tol = t == DType::BFloat16 ? 0.02 : 0.01;  // bfloat16 rounding adds its own spread
    CHECK(std::abs(m.mean - 2) < 0.05);
    CHECK(std::abs(m.stddev / 3 - 1) < tol);
  }
  // stddev 0 gives the mean.
  for (double v : values_as_double(random::normal({5}, {.mean = -1.5, .stddev = 0}))) CHECK(v == -1.5);
}

TEST_CASE("truncated_normal stays within two stddev and redraws per element", "[ops][random]") {
  for (DType t : kFloatTypes) {
    INFO("dtype " << t);
    random::set_seed(24);
    Tensor n = random::truncated_normal({100000}, {.mean = 1, .stddev = 2, .dtype = t});
    Moments m = moments(n);
    CHECK(m.min >= 1 - 4.0);
    CHECK(m.max <= 1 + 4.0);
    CHECK(std::abs(m.mean - 1) < 0.03);
    // The standard normal truncated to [-2, 2] has stddev 0.8796.
    CHECK(std::abs(m.stddev / 2 - 0.87962) < 0.01);
  }
  // An element's first attempt is random_normal's draw for the same seeds; only outliers are redrawn.
  random::set_seed(25);
  std::vector<float> plain = random::normal({4096}, {.seed = 1}).to_vector<float>();
  random::set_seed(25);
  std::vector<float> truncated = random::truncated_normal({4096}, {.seed = 1}).to_vector<float>();
  int redrawn = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    if (std::abs(plain[i]) < 2) {
      CHECK(truncated[i] == plain[i]);
    } else {
      ++redrawn;
      CHECK(std::abs(truncated[i]) < 2);
    }
  }
  CHECK(redrawn > 100);  // about 4.55% of 4096
  CHECK(redrawn < 280);
}

TEST_CASE("random ops handle empty shapes", "[ops][random]") {
  random::set_seed(26);
  Tensor u = random::uniform({0, 3});
  CHECK(u.shape() == Shape{0, 3});
  CHECK(u.dtype() == DType::Float32);
  CHECK(random::normal({2, 0}, {.dtype = DType::Float64}).shape() == Shape{2, 0});
  CHECK(random::truncated_normal({0}, {.dtype = DType::BFloat16}).num_elements() == 0);
  CHECK(random::uniform({0}, {.minval = 0, .maxval = 3, .dtype = DType::Int64}).dtype() == DType::Int64);
  CHECK(random::normal({}).shape() == Shape{});  // 0-d: one sample
}

TEST_CASE("permutation", "[ops][random]") {
  Tensor p = random::permutation(10, 42);
  REQUIRE(p.dtype() == DType::Int64);
  REQUIRE(p.shape() == Shape{10});
  std::vector<int64_t> v = p.to_vector<int64_t>();
  CHECK(v == random::permutation(10, 42).to_vector<int64_t>());  // deterministic per seed
  CHECK(v != random::permutation(10, 43).to_vector<int64_t>());
  std::vector<int64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 10; ++i) CHECK(sorted[static_cast<size_t>(i)] == i);
  CHECK(random::permutation(0, 1).shape() == Shape{0});
  CHECK(random::permutation(1, 1).to_vector<int64_t>() == std::vector<int64_t>{0});
  // All 6 orders of 3 items are equally likely.
  std::map<std::vector<int64_t>, int> counts;
  for (uint64_t seed = 0; seed < 6000; ++seed) counts[random::permutation(3, seed).to_vector<int64_t>()]++;
  REQUIRE(counts.size() == 6);
  for (auto& [order, count] : counts) CHECK(std::abs(count - 1000) < 150);
  // Unseeded permutations follow the global seed.
  random::set_seed(27);
  std::vector<int64_t> a = random::permutation(50).to_vector<int64_t>();
  random::set_seed(27);
  CHECK(random::permutation(50).to_vector<int64_t>() == a);
}

TEST_CASE("random ops reject bad arguments", "[ops][random]") {
  using Catch::Contains;
  CHECK_THROWS_AS(random::normal({2}, {.stddev = -1}), InvalidArgument);
  CHECK_THROWS_WITH(random::normal({2}, {.stddev = -1}), Contains("random_normal") && Contains("stddev"));
  CHECK_THROWS_WITH(random::truncated_normal({2}, {.stddev = -0.5}), Contains("truncated_normal"));
  CHECK_THROWS_AS(random::uniform({2}, {.minval = 2, .maxval = 1}), InvalidArgument);
  CHECK_THROWS_WITH(random::uniform({2}, {.minval = 2, .maxval = 1}), Contains("random_uniform"));
  CHECK_THROWS_AS(random::uniform({2}, {.minval = 1, .maxval = 1, .dtype = DType::Int32}), InvalidArgument);
  CHECK_THROWS_WITH(random::uniform({2}, {.minval = 3, .maxval = 1, .dtype = DType::Int64}),
                    Contains("random_uniform") && Contains("minval < maxval"));
  CHECK_THROWS_AS(random::uniform({2}, {.minval = 0.5, .maxval = 3, .dtype = DType::Int32}), InvalidArgument);
  CHECK_THROWS_AS(random::uniform({2}, {.minval = 0, .maxval = 3e9, .dtype = DType::Int32}), InvalidArgument);
  CHECK_THROWS_WITH(random::uniform({2}, {.dtype = DType::UInt8}), Contains("random_uniform") && Contains("uint8"));
  CHECK_THROWS_AS(random::uniform({2}, {.dtype = DType::Bool}), InvalidArgument);
  CHECK_THROWS_WITH(random::normal({2}, {.dtype = DType::Int32}), Contains("random_normal") && Contains("int32"));
  CHECK_THROWS_AS(random::truncated_normal({2}, {.dtype = DType::Int64}), InvalidArgument);
  CHECK_THROWS_WITH(random::normal({2, -1}), Contains("random_normal") && Contains("(2, -1)"));
  CHECK_THROWS_AS(random::uniform({-3}), InvalidArgument);
  CHECK_THROWS_WITH(random::permutation(-1), Contains("permutation"));
}
