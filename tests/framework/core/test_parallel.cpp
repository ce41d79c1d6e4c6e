// parallel_for's split: the same chunks whoever runs them (the pool, the calling thread under a
// ScopedThreadLimit, a pipeline worker whose OpenMP limit is 1), and so the same bits from every kernel that
// builds its result from per-chunk partials.
#include <catch2/catch.hpp>

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "data/dataset.h"
#include "framework/core/parallel.h"
#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::same_bits;
using ember::testing::all_equal;
using ember::testing::make;

namespace {

struct ChunkRun {
  int64_t chunk, begin, end;
  std::thread::id thread;
  bool in_body;
  int omp_limit;
};

std::vector<ChunkRun> record_chunks(int64_t n, int64_t grain) {
  std::mutex mu;
  std::vector<ChunkRun> runs;
  parallel_for_chunks(n, grain, [&](int64_t chunk, int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mu);
    runs.push_back({chunk, begin, end, std::this_thread::get_id(), in_parallel_body(), omp_get_max_threads()});
  });
  std::sort(runs.begin(), runs.end(), [](const ChunkRun& a, const ChunkRun& b) { return a.chunk < b.chunk; });
  return runs;
}

std::vector<std::tuple<int64_t, int64_t, int64_t>> spans(const std::vector<ChunkRun>& runs) {
  std::vector<std::tuple<int64_t, int64_t, int64_t>> out;
  for (const ChunkRun& r : runs) out.emplace_back(r.chunk, r.begin, r.end);
  return out;
}

// Runs f on a fresh thread whose OpenMP limit is 1, as the input pipeline's workers run.
template <class F>
auto on_one_thread_worker(F f) {
  decltype(f()) result;
  std::thread t([&] {
    omp_set_num_threads(1);
    result = f();
  });
  t.join();
  return result;
}

struct PoolThreads {
  int before = config::get_intra_op_parallelism_threads();
  explicit PoolThreads(int n) { config::set_intra_op_parallelism_threads(n); }
  ~PoolThreads() { config::set_intra_op_parallelism_threads(before); }
};

}  // namespace

TEST_CASE("parallel_for: a thread limit runs the same chunks, in order, on the calling thread", "[core][parallel]") {
  PoolThreads pool(2);
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> expected = {{0, 0, 500}, {1, 500, 1001}};
  const std::vector<ChunkRun> pooled = record_chunks(1001, 100);
  CHECK(spans(pooled) == expected);
  for (const ChunkRun& r : pooled) CHECK(r.in_body);
  if (omp_get_max_threads() >= 2) CHECK(pooled[0].thread != pooled[1].thread);

  std::vector<ChunkRun> limited;
  {
    ScopedThreadLimit limit(1);
    limited = record_chunks(1001, 100);
  }
  CHECK(spans(limited) == expected);
  for (const ChunkRun& r : limited) {
    CHECK(r.thread == std::this_thread::get_id());
    CHECK(r.in_body);
    CHECK(r.omp_limit == 1);  // a library the body calls stays on this thread, as inside a region
  }
  CHECK_FALSE(in_parallel_body());
  CHECK(omp_get_max_threads() == 2);  // restored after the loop

  // A pipeline worker (OpenMP limit 1) splits the same way.
  const std::vector<ChunkRun> worker = on_one_thread_worker([] { return record_chunks(1001, 100); });
  CHECK(spans(worker) == expected);

  // Small loops stay whole; a loop inside a body stays whole on the body's thread.
  CHECK(spans(record_chunks(100, 100)) == std::vector<std::tuple<int64_t, int64_t, int64_t>>{{0, 0, 100}});
  std::vector<int64_t> nested;
  std::mutex mu;
  parallel_for(1000, 100, [&](int64_t, int64_t) {
    const int64_t chunks = parallel_chunks(1000, 100);
    std::lock_guard<std::mutex> lock(mu);
    nested.push_back(chunks);
  });
  CHECK(nested == std::vector<int64_t>{1, 1});
}

TEST_CASE("parallel_for: kernels built from partials give the same bits under a thread limit and on a worker",
          "[core][parallel]") {
  PoolThreads pool(2);
  // x @ w at batch 8 adds per-chunk partial products over the inner dimension; a long reduced axis merges
  // per-chunk partial sums.
  const Tensor x = make(ember::testing::uniform_values(8 * 784, 3), {8, 784}, DType::Float32);
  const Tensor w = make(ember::testing::uniform_values(784 * 256, 4), {784, 256}, DType::Float32);
  const Tensor long_axis = make(ember::testing::uniform_values(4 * 100000, 5), {100000, 4}, DType::Float32);
  auto compute = [&] {
    return std::vector<Tensor>{ops::matmul(x, w), ops::reduce_sum(long_axis, {0}), ops::softmax(long_axis, 0)};
  };
  const std::vector<Tensor> pooled = compute();
  std::vector<Tensor> limited;
  {
    ScopedThreadLimit limit(1);
    limited = compute();
  }
  const std::vector<Tensor> worker = on_one_thread_worker(compute);
  // A map on the pipeline's worker threads, as a Dataset runs it.
  const data::Dataset mapped = data::Dataset::range(2).map(
      [&](const Tensor&) { return ops::matmul(x, w); }, {.num_parallel_calls = 2});
  std::vector<Tensor> from_map;
  for (const data::Element& e : mapped) from_map.push_back(e[0]);
  for (size_t i = 0; i < pooled.size(); ++i) {
    INFO("result " << i);
    CHECK(same_bits(limited[i], pooled[i]));
    CHECK(same_bits(worker[i], pooled[i]));
  }
  REQUIRE(from_map.size() == 2);
  for (const Tensor& t : from_map) CHECK(same_bits(t, pooled[0]));
}

namespace {
// A model whose training step costs slow_us more when it runs on the pool (slow_pooled) or on one thread (not
// slow_pooled), and records whether each step ran on the pool, for parallel_for and for the libraries
// (oneDNN and Eigen follow the thread's OpenMP limit).
struct ThreadSensitiveModel : Model {
  layers::Dense dense{1};
  bool slow_pooled = true;
  int slow_us = 500;
  std::vector<bool> pooled, libraries_pooled;
  Tensor call(const Tensor& x, bool training) override { return dense(x); }
  MetricResults train_step(const data::Element& batch) override {
    pooled.push_back(parallel_threads() >= 2);
    libraries_pooled.push_back(omp_get_max_threads() >= 2);
    if (pooled.back() == slow_pooled) std::this_thread::sleep_for(std::chrono::microseconds(slow_us));
    return Model::train_step(batch);
  }
};
}  // namespace

TEST_CASE("training steps run on one thread while that is faster, and on the pool again when it is not",
          "[core][parallel][fit]") {
  PoolThreads pool(2);
  if (omp_get_max_threads() < 2) {
    WARN("OpenMP gives this thread fewer than 2 threads: skipped");
    return;
  }
  ThreadSensitiveModel model;
  // Run eagerly: the steps record, as C++ side effects, what each ran on (a traced step would record once).
  model.compile({.optimizer = "sgd", .loss = "mse", .run_eagerly = true});
  const Tensor x = ops::ones({60, 3}), y = ops::zeros({60, 1});
  // fit: 2 settling steps and 16 timed on the pool, then the same on one thread, which wins and is kept.
  model.fit(x, y, {.batch_size = 1, .epochs = 1, .verbose = 0, .shuffle = false});
  REQUIRE(model.pooled.size() == 60);
  CHECK(all_equal(model.pooled, 0, 18, true));
  CHECK(all_equal(model.pooled, 18, 60, false));
  // train_on_batch shares the choice. Once one thread turns far slower than the pool was (a load arrived,
  // say), the first held window of 16 steps whose median passes 1.4 times the pool's ends the hold (not the
  // hold's 1024 steps): it times one thread, then the pool is timed, wins and is kept.
  model.slow_pooled = false;
  model.slow_us = 3000;
  const Tensor xb = ops::ones({1, 3}), yb = ops::zeros({1, 1});
  for (int i = 0; i < 300; ++i) model.train_on_batch(xb, yb);
  CHECK(all_equal(model.pooled, 60, 68, false));
  CHECK(all_equal(model.pooled, 150, 360, true));
  // On one thread the libraries stay on it too (no pool worker then competes for a core).
  CHECK(model.libraries_pooled == model.pooled);
}

// Op determinism is for the rest of a process, so this case runs in a fresh one: this executable's hidden
// "determinism child" case, which prints what its steps ran on.
TEST_CASE("under op determinism, one-thread steps leave oneDNN and Eigen on the pool (and its bits)",
          "[core][parallel][fit]") {
  std::vector<char> self(4096);
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  REQUIRE(n > 0);
  self[static_cast<size_t>(n)] = '\0';
  FILE* pipe = popen(("'" + std::string(self.data()) + "' 'determinism child' 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[512];
  while (size_t got = fread(buf, 1, sizeof buf, pipe)) out.append(buf, got);
  CHECK(pclose(pipe) == 0);
  INFO(out);
  CHECK(out.find("determinism child: ok") != std::string::npos);
}

TEST_CASE("determinism child", "[.]") {
  PoolThreads pool(2);
  config::enable_op_determinism();
  ThreadSensitiveModel model;
  // Run eagerly: the steps record, as C++ side effects, what each ran on (a traced step would record once).
  model.compile({.optimizer = "sgd", .loss = "mse", .run_eagerly = true});
  // As above: the pool is timed (18 steps), then one thread (2 + 16), which wins and is held.
  model.fit(ops::ones({60, 3}), ops::zeros({60, 1}), {.batch_size = 1, .epochs = 1, .verbose = 0, .shuffle = false});
  int one_thread = 0, libraries_pooled = 0;
  for (size_t i = 0; i < model.pooled.size(); ++i) {
    one_thread += !model.pooled[i];
    libraries_pooled += !model.pooled[i] && model.libraries_pooled[i];
  }
  // At least one timed window's worth of steps ran on one thread, every one with the libraries on the pool.
  const bool ok = one_thread >= 16 && libraries_pooled == one_thread;
  std::printf("determinism child: %s (one-thread steps %d, with the libraries on the pool %d)\n", ok ? "ok" : "wrong",
              one_thread, libraries_pooled);
}
