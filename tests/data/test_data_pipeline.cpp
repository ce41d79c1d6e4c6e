// Dataset sources and the sequential transformations: slices, range, zip, concatenate, generators,
// batch/unbatch/padded_batch, repeat/take/skip/cache algebra, filter, map forms, cardinality.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>

#include "tests/data/data_testing.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using data::Dataset;
using data::Element;
using ember::testing::iota64;
using ember::testing::scalars;

namespace {

// The number of elements one pass yields.
int64_t count(const Dataset& ds) {
  int64_t n = 0;
  for (const Element& e : ds) n += e.empty() ? 0 : 1;
  return n;
}

// A generator dataset of int64 scalars 0..n-1 whose cardinality is unknown.
Dataset generated(int64_t n) {
  return Dataset::from_generator([n] {
    return [i = int64_t{0}, n]() mutable -> std::optional<Element> {
      if (i >= n) return std::nullopt;
      return Element{Tensor::scalar<int64_t>(i++)};
    };
  });
}

Element add_one(const Element& e) { return {ops::add(e[0], Tensor::scalar<int64_t>(1))}; }

}  // namespace

TEST_CASE("data: from_tensor_slices slices axis 0, one tensor or a tuple", "[data]") {
  Tensor x = testing::make(testing::iota(24), {4, 2, 3}, DType::Float32);
  Tensor y = Tensor::from_vector<uint8_t>({7, 8, 9, 10});
  Dataset one = Dataset::from_tensor_slices(x);
  CHECK(one.cardinality() == 4);
  int64_t i = 0;
  for (const Element& e : one) {
    REQUIRE(e.size() == 1);
    testing::check_tensor(e[0], DType::Float32, {2, 3}, testing::iota(6, 6.0 * i));
    ++i;
  }
  CHECK(i == 4);

  Dataset pair = Dataset::from_tensor_slices({x, y});
  i = 0;
  for (const Element& e : pair) {
    REQUIRE(e.size() == 2);
    CHECK(e[0].shape() == Shape{2, 3});
    CHECK(e[1].shape() == Shape{});
    CHECK(e[1].item<uint8_t>() == 7 + i);
    ++i;
  }
  CHECK(i == 4);
}

TEST_CASE("data: from_tensor_slices rejects mismatched first dimensions and scalars", "[data]") {
  Tensor a = Tensor::from_vector<float>({1, 2, 3});
  Tensor b = Tensor::from_vector<float>({1, 2});
  try {
    Dataset::from_tensor_slices({a, b});
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("Dataset.from_tensor_slices") && Catch::Contains("(3,)") && Catch::Contains("(2,)"));
  }
  CHECK_THROWS_AS(Dataset::from_tensor_slices(Tensor::scalar<float>(1)), InvalidArgument);
  CHECK_THROWS_AS(Dataset::from_tensor_slices(std::vector<Tensor>{}), InvalidArgument);
}

TEST_CASE("data: range, zip and concatenate", "[data]") {
  CHECK(scalars(Dataset::range(5)) == iota64(5));
  CHECK(scalars(Dataset::range(2, 11, 3)) == std::vector<int64_t>{2, 5, 8});
  CHECK(scalars(Dataset::range(5, 0, -2)) == std::vector<int64_t>{5, 3, 1});
  CHECK(scalars(Dataset::range(3, 3)).empty());
  CHECK(Dataset::range(2, 11, 3).cardinality() == 3);
  CHECK(Dataset::range(5, 0, -2).cardinality() == 3);
  CHECK(Dataset::range(5, 9, -1).cardinality() == 0);
  CHECK_THROWS_AS(Dataset::range(0, 5, 0), InvalidArgument);
  Tensor r = (*Dataset::range(1).make_iterator().next())[0];
  CHECK(r.dtype() == DType::Int64);
  CHECK(r.shape() == Shape{});

  Dataset z = Dataset::zip({Dataset::range(5), Dataset::range(10, 13)});
  CHECK(z.cardinality() == 3);
  CHECK(scalars(z, 0) == std::vector<int64_t>{0, 1, 2});
  CHECK(scalars(z, 1) == std::vector<int64_t>{10, 11, 12});
  CHECK(Dataset::zip({Dataset::range(5).repeat(), Dataset::range(4)}).cardinality() == 4);
  CHECK(Dataset::zip({Dataset::range(5).repeat(), Dataset::range(4).repeat()}).cardinality() ==
        data::INFINITE_CARDINALITY);
  CHECK(Dataset::zip({generated(3), Dataset::range(4)}).cardinality() == data::UNKNOWN_CARDINALITY);

  Dataset c = Dataset::range(3).concatenate(Dataset::range(10, 12));
  CHECK(c.cardinality() == 5);
  CHECK(scalars(c) == std::vector<int64_t>{0, 1, 2, 10, 11});
  CHECK(Dataset::range(3).concatenate(generated(2)).cardinality() == data::UNKNOWN_CARDINALITY);
  CHECK(Dataset::range(3).concatenate(Dataset::range(2).repeat()).cardinality() == data::INFINITE_CARDINALITY);
}

TEST_CASE("data: from_generator with a factory restarts on every pass, a plain callable continues", "[data]") {
  Dataset g = generated(4);
  CHECK(g.cardinality() == data::UNKNOWN_CARDINALITY);
  CHECK(scalars(g) == iota64(4));
  CHECK(scalars(g) == iota64(4));

  int64_t next = 0;
  Dataset shared = Dataset::from_generator([&next]() -> std::optional<Tensor> {
    if (next >= 3) return std::nullopt;
    return Tensor::scalar<int64_t>(next++);
  });
  CHECK(scalars(shared.take(2)) == std::vector<int64_t>{0, 1});
  CHECK(scalars(shared) == std::vector<int64_t>{2});
  CHECK(scalars(shared).empty());
}

TEST_CASE("data: batch stacks components, keeps or drops the remainder", "[data]") {
  Tensor x = testing::make(testing::iota(20), {10, 2}, DType::Float32);
  Tensor y = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Dataset ds = Dataset::from_tensor_slices({x, y}).batch(4);
  CHECK(ds.cardinality() == 3);
  std::vector<Element> batches;
  for (const Element& b : ds) batches.push_back(b);
  REQUIRE(batches.size() == 3);
  testing::check_tensor(batches[0][0], DType::Float32, {4, 2}, testing::iota(8));
  testing::check_tensor(batches[1][1], DType::Int32, {4}, {4, 5, 6, 7});
  testing::check_tensor(batches[2][0], DType::Float32, {2, 2}, testing::iota(4, 16));
  testing::check_tensor(batches[2][1], DType::Int32, {2}, {8, 9});
  // Batches of from_tensor_slices rows on the CPU are views of those rows, with the values and shapes of
  // batches stacked from elements made one by one (here behind take).
  CHECK(batches[1][0].raw_data() == static_cast<const float*>(x.raw_data()) + 8);
  std::vector<Element> stacked;
  for (const Element& b : Dataset::from_tensor_slices({x, y}).take(10).batch(4)) stacked.push_back(b);
  REQUIRE(stacked.size() == batches.size());
  for (size_t i = 0; i < stacked.size(); ++i)
    for (size_t c = 0; c < 2; ++c) {
      CHECK(stacked[i][c].shape() == batches[i][c].shape());
      CHECK(testing::values_as_double(stacked[i][c]) == testing::values_as_double(batches[i][c]));
      CHECK(stacked[i][c].raw_data() != batches[i][c].raw_data());
    }

  Dataset dropped = Dataset::from_tensor_slices({x, y}).batch(4, {.drop_remainder = true});
  CHECK(dropped.cardinality() == 2);
  CHECK(count(dropped) == 2);
  CHECK(Dataset::range(12).batch(4, {.drop_remainder = true}).cardinality() == 3);
  CHECK(count(Dataset::range(12).batch(4)) == 3);
  CHECK(Dataset::range(3).repeat().batch(2).cardinality() == data::INFINITE_CARDINALITY);
  CHECK(generated(3).batch(2).cardinality() == data::UNKNOWN_CARDINALITY);
  CHECK_THROWS_AS(Dataset::range(3).batch(0), InvalidArgument);

  // 28x28 uint8 images: the bytes arrive intact.
  std::vector<uint8_t> pixels(5 * 28 * 28);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7);
  Tensor images = Tensor::from_vector<uint8_t>(pixels, {5, 28, 28});
  Element b = *Dataset::from_tensor_slices(images).batch(5).make_iterator().next();
  CHECK(b[0].shape() == Shape{5, 28, 28});
  CHECK(b[0].to_vector<uint8_t>() == pixels);
}

TEST_CASE("data: batch of differing shapes is an InvalidArgument and unbatch inverts batch", "[data]") {
  Dataset ragged = Dataset::from_generator([] {
    return [i = int64_t{1}]() mutable -> std::optional<Element> {
      if (i > 3) return std::nullopt;
      std::vector<float> v(static_cast<size_t>(i), static_cast<float>(i));
      ++i;
      return Element{Tensor::from_vector<float>(v)};
    };
  });
  auto it = ragged.batch(3).make_iterator();
  try {
    it.next();
    FAIL("expected InvalidArgument");
  } catch (const InvalidArgument& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("Dataset.batch") && Catch::Contains("padded_batch"));
  }
  CHECK_FALSE(it.next().has_value());  // the pass is finished after an error

  Dataset round = Dataset::zip({Dataset::range(7), Dataset::range(100, 107)}).batch(3).unbatch();
  CHECK(scalars(round, 0) == iota64(7));
  CHECK(scalars(round, 1) == iota64(7, 100));
  CHECK(round.cardinality() == data::UNKNOWN_CARDINALITY);
}

TEST_CASE("data: padded_batch pads to the longest or to padded_shapes", "[data]") {
  // Element i: a vector of i copies of i (lengths 1, 2, 3) and a scalar.
  Dataset ds = Dataset::from_generator([] {
    return [i = int64_t{1}]() mutable -> std::optional<Element> {
      if (i > 3) return std::nullopt;
      std::vector<int32_t> v(static_cast<size_t>(i), static_cast<int32_t>(i));
      Element e{Tensor::from_vector<int32_t>(v), Tensor::scalar<float>(static_cast<float>(i))};
      ++i;
      return e;
    };
  });
  std::vector<Element> out;
  for (const Element& e : ds.padded_batch(2, {.padding_values = {-1}})) out.push_back(e);
  REQUIRE(out.size() == 2);
  testing::check_tensor(out[0][0], DType::Int32, {2, 2}, {1, -1, 2, 2});
  testing::check_tensor(out[0][1], DType::Float32, {2}, {1, 2});
  testing::check_tensor(out[1][0], DType::Int32, {1, 3}, {3, 3, 3});

  std::vector<Element> fixed;
  for (const Element& e : ds.padded_batch(2, {.padded_shapes = {Shape{4}, Shape{}}, .drop_remainder = true}))
    fixed.push_back(e);
  REQUIRE(fixed.size() == 1);
  testing::check_tensor(fixed[0][0], DType::Int32, {2, 4}, {1, 0, 0, 0, 2, 2, 0, 0});

  // Two dimensions, one padded to a fixed size and one to the batch's longest.
  Dataset grid = Dataset::from_generator([] {
    return [i = int64_t{1}]() mutable -> std::optional<Element> {
      if (i > 2) return std::nullopt;
      Tensor t = testing::make(testing::iota(i * i, 1), {i, i}, DType::Float32);
      ++i;
      return Element{t};
    };
  });
  Element g = *grid.padded_batch(2, {.padded_shapes = {Shape{3, -1}}}).make_iterator().next();
  testing::check_tensor(g[0], DType::Float32, {2, 3, 2}, {1, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0, 0});

  auto it = ds.padded_batch(3, {.padded_shapes = {Shape{2}, Shape{}}}).make_iterator();
  CHECK_THROWS_AS(it.next(), InvalidArgument);  // length 3 does not fit in 2
}

TEST_CASE("data: repeat, take and skip compose as tf.data's", "[data]") {
  Dataset r = Dataset::range(5);
  CHECK(scalars(r.repeat(3)) == std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4});
  CHECK(scalars(r.repeat(0)).empty());
  CHECK(scalars(r.repeat().take(12)) == std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1});
  CHECK(scalars(r.take(3)) == std::vector<int64_t>{0, 1, 2});
  CHECK(scalars(r.take(-1)) == iota64(5));
  CHECK(scalars(r.take(0)).empty());
  CHECK(scalars(r.take(10)) == iota64(5));
  CHECK(scalars(r.skip(3)) == std::vector<int64_t>{3, 4});
  CHECK(scalars(r.skip(-1)).empty());
  CHECK(scalars(r.skip(10)).empty());
  CHECK(scalars(r.skip(2).take(2)) == std::vector<int64_t>{2, 3});
  CHECK(scalars(r.take(2).repeat(2)) == std::vector<int64_t>{0, 1, 0, 1});
  CHECK(scalars(r.repeat(2).skip(3).take(4)) == std::vector<int64_t>{3, 4, 0, 1});
  // An empty input repeated forever ends instead of spinning (TF's rule).
  CHECK(scalars(r.take(0).repeat()).empty());
  CHECK(scalars(generated(0).repeat()).empty());
}

TEST_CASE("data: shard keeps every num_shards-th element from index, as tf.data's", "[data]") {
  Dataset r = Dataset::range(10);
  CHECK(scalars(r.shard(3, 0)) == std::vector<int64_t>{0, 3, 6, 9});
  CHECK(scalars(r.shard(3, 1)) == std::vector<int64_t>{1, 4, 7});
  CHECK(scalars(r.shard(3, 2)) == std::vector<int64_t>{2, 5, 8});
  CHECK(scalars(r.shard(1, 0)) == iota64(10));
  CHECK(scalars(r.shard(20, 12)).empty());
  for (int64_t i = 0; i < 4; ++i)  // cardinality matches what a pass yields
    CHECK(r.shard(4, i).cardinality() == static_cast<int64_t>(scalars(r.shard(4, i)).size()));
  CHECK(r.repeat().shard(2, 1).cardinality() == data::INFINITE_CARDINALITY);
  CHECK(scalars(r.repeat().shard(4, 3).take(4)) == std::vector<int64_t>{3, 7, 1, 5});
  CHECK(r.filter([](const Tensor&) { return true; }).shard(2, 0).cardinality() == data::UNKNOWN_CARDINALITY);
  // Shards of workers, each batching its part: together they hold every element once.
  std::vector<int64_t> all;
  for (int64_t w = 0; w < 2; ++w)
    for (const data::Element& b : r.shard(2, w).batch(2))
      for (int64_t v : b[0].to_vector<int64_t>()) all.push_back(v);
  std::sort(all.begin(), all.end());
  CHECK(all == iota64(10));
  CHECK_THROWS_WITH(r.shard(0, 0), Catch::Contains("Dataset.shard") && Catch::Contains("num_shards"));
  CHECK_THROWS_AS(r.shard(2, 2), InvalidArgument);
  CHECK_THROWS_WITH(r.shard(2, -1), Catch::Contains("index must be in [0, 1]") && Catch::Contains("got -1"));
}

TEST_CASE("data: cardinality follows TF's rules and matches the elements counted", "[data]") {
  const int64_t inf = data::INFINITE_CARDINALITY, unknown = data::UNKNOWN_CARDINALITY;
  Dataset r = Dataset::range(10);
  CHECK(r.repeat().cardinality() == inf);
  CHECK(r.take(0).repeat().cardinality() == 0);
  CHECK(r.repeat().take(7).cardinality() == 7);
  CHECK(r.repeat().skip(7).cardinality() == inf);
  CHECK(r.filter([](const Tensor&) { return true; }).cardinality() == unknown);
  CHECK(generated(3).repeat().cardinality() == inf);
  CHECK(generated(3).repeat(2).cardinality() == unknown);
  CHECK(generated(3).take(2).cardinality() == unknown);
  CHECK(r.shuffle(4).map(add_one).prefetch(2).cache().cardinality() == 10);
  CHECK(r.map(add_one, {.num_parallel_calls = 2}).cardinality() == 10);

  const std::vector<Dataset> known = {
      r.repeat(3),      r.take(4),          r.skip(4),       r.skip(20),
      r.batch(3),       r.batch(3, {true}), r.repeat(2).batch(4), r.take(-1).skip(-1),
      r.shuffle(3).take(20), r.concatenate(r.take(3)), Dataset::zip({r, r.skip(3)}), r.repeat().take(25).batch(10),
      r.cache().prefetch(data::AUTOTUNE)};
  for (size_t i = 0; i < known.size(); ++i) {
    INFO("dataset " << i);
    CHECK(known[i].cardinality() >= 0);
    CHECK(count(known[i]) == known[i].cardinality());
  }
}

TEST_CASE("data: cache runs its input only on the first complete pass", "[data]") {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto counting = [calls](const Element& e) {
    ++*calls;
    return Element{ops::mul(e[0], Tensor::scalar<int64_t>(10))};
  };
  Dataset cached = Dataset::range(5).map(counting).cache();
  CHECK(scalars(cached) == std::vector<int64_t>{0, 10, 20, 30, 40});
  CHECK(*calls == 5);
  CHECK(scalars(cached) == std::vector<int64_t>{0, 10, 20, 30, 40});
  CHECK(scalars(cached.repeat(3)).size() == 15);
  CHECK(*calls == 5);

  // A pass left early caches nothing; the next complete pass fills the cache.
  *calls = 0;
  Dataset fresh = Dataset::range(5).map(counting).cache();
  for (const Element& e : fresh) {
    if (e[0].item<int64_t>() == 10) break;
  }
  CHECK(*calls == 2);
  CHECK(scalars(fresh) == std::vector<int64_t>{0, 10, 20, 30, 40});
  CHECK(*calls == 7);
  CHECK(scalars(fresh).size() == 5);
  CHECK(*calls == 7);

  // A shuffle after the cache reshuffles the cached elements each pass.
  Dataset shuffled = Dataset::range(50).map(counting).cache().shuffle(50, {.seed = 3});
  *calls = 0;
  std::vector<int64_t> a = scalars(shuffled), b = scalars(shuffled);
  CHECK(*calls == 50);
  CHECK(a != b);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  CHECK(a == b);
}

TEST_CASE("data: map accepts an Element function, tensor arguments, and a Tensor result", "[data]") {
  Dataset pairs = Dataset::zip({Dataset::range(3), Dataset::range(10, 13)});
  CHECK(scalars(Dataset::range(3).map(add_one)) == std::vector<int64_t>{1, 2, 3});
  CHECK(scalars(pairs.map([](const Tensor& a, const Tensor& b) { return ops::add(a, b); })) ==
        std::vector<int64_t>{10, 12, 14});
  Dataset swapped = pairs.map([](const Tensor& a, const Tensor& b) { return Element{b, a}; });
  CHECK(scalars(swapped, 0) == std::vector<int64_t>{10, 11, 12});
  Dataset evens = Dataset::range(10).filter([](const Tensor& x) { return x.item<int64_t>() % 2 == 0; });
  CHECK(scalars(evens) == std::vector<int64_t>{0, 2, 4, 6, 8});
  CHECK(scalars(pairs.filter([](const Element& e) { return e[1].item<int64_t>() != 11; }), 0) ==
        std::vector<int64_t>{0, 2});

  auto it = pairs.map([](const Tensor& a) { return a; }).make_iterator();  // one argument, two components
  CHECK_THROWS_WITH(it.next(), Catch::Contains("takes 1 tensor argument(s) but the element has 2"));
}

TEST_CASE("data: a Dataset is an immutable value and a pass outlives it", "[data]") {
  Dataset base = Dataset::range(4);
  Dataset taken = base.take(2);
  CHECK(scalars(base) == iota64(4));
  CHECK(scalars(taken) == iota64(2));
  std::optional<data::Iterator> it;
  {
    Dataset temp = Dataset::range(3).map(add_one).batch(2);
    it.emplace(temp.make_iterator());
  }
  CHECK((*it->next())[0].to_vector<int64_t>() == std::vector<int64_t>{1, 2});
  CHECK((*it->next())[0].to_vector<int64_t>() == std::vector<int64_t>{3});
  CHECK_FALSE(it->next().has_value());
  CHECK_FALSE(it->next().has_value());
}
