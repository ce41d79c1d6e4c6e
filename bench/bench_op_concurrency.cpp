// Whether running independent ops at once, one thread each (TensorFlow's inter-op parallelism), would use the
// intra-op pool's threads better than running each op on all of them in turn. The ops are the float32 products
// of the batch-128 Fashion-MNIST MLP step (784-256-256-10, the shapes of bench_function's mlp_b128): its three
// forward products, the last layer's input and kernel gradients dy3 @ w3^T and h2^T @ dy3, the second layer's
// dy2 @ w2^T and h1^T @ dy2, and the first layer's kernel gradient x^T @ dy1.
// Rows:
//   bits_*     whether the product on one thread gives the pool's bits (1 = the same);
//   pool_*     each product on the pool (value) against on one thread (reference): the pool's own speedup;
//   pair_*     two independent products run at once, one thread each (value), against in turn on the pool
//              (reference): speedup > 1 means running them at once wins;
//   written_*  a forward product after the pool's threads wrote the weight's rows as the optimizer's update
//              splits them (value), against the weight only read (reference): what writing it costs the product;
//   elsewhere_* the same after the same writes to another tensor of the weight's size: what writes cost alone;
//   colbits_*  whether the forward product split by the weight's columns (one dnnl_sgemm per pool thread, on
//              the columns parallel_for gives it) gives the pool's bits (1 = the same);
//   colsplit_* that column-split product after each pool thread wrote the same columns of the weight, its Adam
//              slots m and v alike (an update split as the product is: each core reads back what it wrote),
//              against oneDNN's product after the update's row-split writes (today's step);
//   colswap_*  the column-split product after the weight's columns were written by the other pool thread
//              (value) against by its own (reference): what reading them from the other core's cache costs.
// Times are the best of --reps calls each (interleaved), which a busy machine disturbs least; colsplit_ and
// colswap_ give the median instead: their best calls came from the VM's fast stretches, in either order.
// Usage: bench_op_concurrency [--json] [--reps N] [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <oneapi/dnnl/dnnl.h>

#include "bench/bench_util.h"
#include "framework/core/parallel.h"
#include "framework/ops/cpu/small_batch.h"
#include "framework/ember.h"

using namespace ember;
using namespace ember::bench;

namespace {

constexpr int64_t kBatch = 128;

struct Product {
  std::string name;
  std::function<Tensor()> run;
};

// Runs fn on one thread: parallel_for's chunks in turn and oneDNN on the calling thread.
template <class F>
auto on_one_thread(F&& fn) {
  ScopedThreadLimit limit(1);
  ScopedOpenMPThreads libraries(1);
  return fn();
}

// Runs a and b at once, each on one pool thread (inside a parallel_for body products stay on their thread).
void at_once(const Product& a, const Product& b) {
  parallel_for_chunks(2, 1, [&](int64_t chunk, int64_t, int64_t) {
    keep_alive((chunk == 0 ? a : b).run().raw_data());
  });
}

template <class F>
double us(F&& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// Writes each row of w back unchanged, the rows split over the pool as the optimizer's update splits a kernel's.
void write_rows(Tensor& w) {
  float* p = w.data<float>();
  const int64_t cols = w.shape()[1];
  parallel_for(w.shape()[0], cpu::kSplitMinRows, [&](int64_t begin, int64_t end) {
    // The same values (none is -0), each stored: p[i] * 1 would be folded away with the store.
    for (int64_t i = begin * cols; i < end * cols; ++i) p[i] = p[i] + 0.0f;
  });
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Writes each of w's columns back unchanged, the columns split over the pool as matmul_cols splits them.
void write_cols(Tensor& w) {
  float* p = w.data<float>();
  const int64_t rows = w.shape()[0], cols = w.shape()[1];
  parallel_for(cols, cpu::kSplitMinRows, [&](int64_t begin, int64_t end) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = begin; j < end; ++j) p[r * cols + j] = p[r * cols + j] + 0.0f;
  });
}

// x @ w split by w's columns, one dnnl_sgemm per pool thread (each on the chunk of columns parallel_for gives
// it, or with `swap` on the other thread's chunk; two threads then).
Tensor matmul_cols(const Tensor& x, const Tensor& w, bool swap = false) {
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[1];
  Tensor out = Tensor::empty({m, n}, DType::Float32);
  const float *a = x.data<float>(), *b = w.data<float>();
  float* c = out.data<float>();
  const int64_t chunks = parallel_chunks(n, cpu::kSplitMinRows);
  parallel_for_chunks(n, cpu::kSplitMinRows, [&](int64_t chunk, int64_t, int64_t) {
    const int64_t t = swap ? chunks - 1 - chunk : chunk, begin = n * t / chunks, end = n * (t + 1) / chunks;
    dnnl_sgemm('N', 'N', m, end - begin, k, 1.0f, a, k, b + begin, n, 0.0f, c + begin, n);
  });
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = json_requested(argc, argv);
  int reps = 500, threads = 2;
  for (int i = json ? 2 : 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
      if (threads < 2) {
        std::fprintf(stderr, "bench_op_concurrency: --threads takes a count of at least 2 (a pair runs on two)\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: bench_op_concurrency [--json] [--reps N] [--threads N]\n");
      return 2;
    }
  }
  config::set_intra_op_parallelism_threads(threads);
  set_denormal_flags();
  Tensor x = random::uniform({kBatch, 784}), w1 = random::uniform({784, 256}), b1 = random::uniform({256}),
         w2 = random::uniform({256, 256}), w3 = random::uniform({256, 10}), h1 = random::uniform({kBatch, 256}),
         h2 = random::uniform({kBatch, 256}), dy1 = random::uniform({kBatch, 256}),
         dy2 = random::uniform({kBatch, 256}), dy3 = random::uniform({kBatch, 10});
  const std::vector<Product> products = {
      {"x@w1", [&] { return ops::matmul(x, w1); }},
      {"h1@w2", [&] { return ops::matmul(h1, w2); }},
      {"h2@w3", [&] { return ops::matmul(h2, w3); }},
      {"dy3@w3t", [&] { return ops::matmul(dy3, w3, {.transpose_b = true}); }},
      {"h2t@dy3", [&] { return ops::matmul(h2, dy3, {.transpose_a = true}); }},
      {"dy2@w2t", [&] { return ops::matmul(dy2, w2, {.transpose_b = true}); }},
      {"h1t@dy2", [&] { return ops::matmul(h1, dy2, {.transpose_a = true}); }},
      {"xt@dy1", [&] { return ops::matmul(x, dy1, {.transpose_a = true}); }},
  };
  auto find = [&](const std::string& name) -> const Product& {
    for (const Product& p : products)
      if (p.name == name) return p;
    std::abort();
  };
  if (!json)
    std::printf("batch-128 MLP products, %d intra-op threads, best of %d calls; pool_/written_: speedup = "
                "reference / value\n",
                config::get_intra_op_parallelism_threads(), reps);
  for (const Product& p : products) {
    const Tensor pool = p.run(), one = on_one_thread(p.run);
    const bool same = std::memcmp(pool.raw_data(), one.raw_data(), static_cast<size_t>(pool.nbytes())) == 0;
    print({"bits_" + p.name, "same", "pool", same ? 1.0 : 0.0, 1.0, same ? 1.0 : 0.0}, json);
  }
  for (const Product& p : products) {
    double pool = 1e300, one = 1e300;
    for (int r = 0; r < reps; ++r) {
      pool = std::min(pool, us([&] { keep_alive(p.run().raw_data()); }));
      one = std::min(one, on_one_thread([&] { return us([&] { keep_alive(p.run().raw_data()); }); }));
    }
    print({"pool_" + p.name, "us", "1 thread", pool, one, one / pool}, json);
  }
  // The step's independent pairs (the last layer's two gradients; the second layer's, were its kernel gradient
  // not fused into the update), the first two layers' kernel gradients, and one product twice.
  const std::pair<const char*, const char*> pairs[] = {
      {"dy3@w3t", "h2t@dy3"}, {"dy2@w2t", "h1t@dy2"}, {"xt@dy1", "h1t@dy2"}, {"dy2@w2t", "dy2@w2t"}};
  for (const auto& [an, bn] : pairs) {
    const Product &a = find(an), &b = find(bn);
    double in_turn = 1e300, together = 1e300;
    for (int r = 0; r < reps; ++r) {
      in_turn = std::min(in_turn, us([&] {
                           keep_alive(a.run().raw_data());
                           keep_alive(b.run().raw_data());
                         }));
      together = std::min(together, us([&] { at_once(a, b); }));
    }
    print({"pair_" + a.name + "+" + b.name, "us", "in turn", together, in_turn, in_turn / together}, json);
  }
  const Product layer1{"x@w1+b_relu", [&] { return ops::matmul_bias_relu(x, w1, b1); }}, layer2 = find("h1@w2");
  for (const auto& [p, w] : {std::pair{&layer1, &w1}, std::pair{&layer2, &w2}}) {
    Tensor other = random::uniform(w->shape());
    double read = 1e300, written = 1e300, elsewhere = 1e300;
    for (int r = 0; r < reps; ++r) {
      read = std::min(read, us([&] { keep_alive(p->run().raw_data()); }));
      write_rows(*w);
      written = std::min(written, us([&] { keep_alive(p->run().raw_data()); }));
      write_rows(other);
      elsewhere = std::min(elsewhere, us([&] { keep_alive(p->run().raw_data()); }));
    }
    print({"written_" + p->name, "us", "read only", written, read, read / written}, json);
    print({"elsewhere_" + p->name, "us", "read only", elsewhere, read, read / elsewhere}, json);
  }
  for (const auto& [name, in, w] : {std::tuple{"x@w1", &x, &w1}, std::tuple{"h1@w2", &h1, &w2}}) {
    const Tensor pool = ops::matmul(*in, *w), cols = matmul_cols(*in, *w);
    const bool same = std::memcmp(pool.raw_data(), cols.raw_data(), static_cast<size_t>(pool.nbytes())) == 0;
    print({std::string("colbits_") + name, "same", "pool", same ? 1.0 : 0.0, 1.0, same ? 1.0 : 0.0}, json);
  }
  for (const auto& [name, in, w] : {std::tuple{"x@w1", &x, &w1}, std::tuple{"h1@w2", &h1, &w2}}) {
    Tensor m = random::uniform(w->shape()), v = random::uniform(w->shape());
    std::vector<double> today, matched, own, other;
    for (int r = 0; r < reps; ++r) {
      for (Tensor* t : {w, &m, &v}) write_rows(*t);
      today.push_back(us([&] { keep_alive(ops::matmul(*in, *w).raw_data()); }));
      for (Tensor* t : {w, &m, &v}) write_cols(*t);
      matched.push_back(us([&] { keep_alive(matmul_cols(*in, *w).raw_data()); }));
      write_cols(*w);
      own.push_back(us([&] { keep_alive(matmul_cols(*in, *w).raw_data()); }));
      write_cols(*w);
      other.push_back(us([&] { keep_alive(matmul_cols(*in, *w, true).raw_data()); }));
    }
    const double t = median(today), mt = median(matched), o = median(own), x = median(other);
    print({std::string("colsplit_") + name, "us", "today", mt, t, t / mt}, json);
    print({std::string("colswap_") + name, "us", "own", x, o, o / x}, json);
  }
  return 0;
}
