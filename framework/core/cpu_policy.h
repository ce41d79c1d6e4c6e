#pragma once
// Internal: the CPU speed decisions that rest on figures measured on particular machines, in one policy object:
// when sgemm splits a float32 product over the pool itself, runs it as an outer product or keeps it on the
// calling thread (framework/ops/cpu/matmul.cpp), and how the training step chooses its thread count
// (framework/model/compiled_steps.cpp). The kernel and the training loop read these figures and hold none of
// their own.
// Each figure says what it was measured on and how to measure it again: a machine that measures otherwise
// changes it here. None changes a result's bits except where a comment says so.
#include <cstdint>

#include "framework/core/mode_tuner.h"

namespace ember::detail {

// sgemm's thresholds (matmul.cpp). The figures are single products on a 2-core x86-64 machine; re-measure with
// bench_matmul (its matmul_tn rows time the small-batch weight gradient both ways) and bench_train --only
// latency (the batch-1 and batch-8 MLP steps, which run every small-batch path), with the figure halved and
// doubled.
struct SgemmPolicy {
  // A small-batch product (at most cpu::kSmallBatch rows against a large matrix: x @ w, dy @ w^T, x^T @ dy)
  // splits over the pool by the large matrix's rows from this many elements of that matrix, so that each
  // thread keeps the same rows of a weight from step to step. Measured on the MLP's 784x256 and 256x256
  // weights: a batch-8 step took 171 us split against 230 with oneDNN's own threading where the two cores
  // share no cache, 99.7 against 103.8 where they share one; smaller matrices stay with oneDNN unmeasured.
  // oneDNN 2.6 also threads the weight gradient poorly: on 2 threads of a Zen 1 CPU a 784x256 product took
  // 97 us at k = 1 and 107 at k = 8 against 31 and 64 split by rows (bench_matmul's matmul_tn rows).
  int64_t split_min_elements = 65536;
  // m * n * k below which a product runs oneDNN on the calling thread: oneDNN threads some products too small
  // to repay it (256x10 at k = 8, a batch-8 last-layer weight gradient: 1.7 us on 2 threads, 0.8 on one). On
  // one thread the result also stops depending on the pool's size (oneDNN splits the inner dimension of a
  // few, such as 1x64 at k = 256), so lowering this figure can change bits.
  int64_t serial_max_product = 65536;
  // k = 1 products (a batch-1 weight gradient) at least this wide run as Eigen outer products, which write
  // each row of c once: 784x256 took 7.5 us against dnnl_sgemm's 10.1, 256x256 2.3 against 3.6 (one thread,
  // c not in cache). Each element is one rounded product either way.
  int64_t outer_min_cols = 64;
};

// How fit and train_on_batch choose the training step's thread count (compiled_steps.cpp's
// tuned_train_step): they time steps on the pool and on the training thread alone (ModeTuner mode true) and
// keep the faster. One thread wins when a step's ops are too small to pay for waking the pool and for moving their operands between
// cores: on a 2-core machine whose cores shared no cache, a batch-8 MLP step took 116-123 us on one thread
// against 153-156 on two (82-95 on two against about 134 on one where they shared one); since the factored
// kernel gradients two threads win there both ways, which the timing finds out as it would the opposite.
// One thread also wins on a machine busy with other work, whatever the step: there the pool's threads seldom
// run at once, and each parallel region waits for the one set aside while the other spins (libgomp spins
// 300000 pauses before it sleeps; OMP_WAIT_POLICY and GOMP_SPINCOUNT would shorten that, but libgomp reads
// them once as it loads, before any of Ember's code runs, so only the user can set them). 100 batch-128 MLP
// steps on a 2-core machine already running builds took 24.4 s on the pool beside two busy processes against
// 0.63 s on one thread (0.96 and 0.33 s without them). Re-measure: bench_train --only latency and --only
// loaded.
struct StepThreadPolicy {
  // Two settling steps after a switch warm the caches; a window of 16 steps per mode is short next to the
  // seconds a shared machine spends at one speed, and the losing mode's window is cut short. A held window
  // whose median step passes 1.4 times the slower mode's timed median (a load arrived: on the pool a
  // batch-128 MLP step took 3.3 times as long beside one busy process on 2 cores, every step of it) times
  // the other mode at once. The median keeps a step the scheduler interrupted once from doing that, and the
  // slower mode's keeps one thread, once the pool lost by far under a load, from trying the pool again for
  // noise (each try costs a few steps on the pool). A load that leaves is found out at the hold's end.
  ModeTunerOptions tuner{.settle = 2, .window = 16, .min_hold = 1024, .max_hold = 16384, .retime_ratio = 1.4};
};

struct CpuPolicy {
  SgemmPolicy sgemm;
  StepThreadPolicy step_threads;
};

// The policy every CPU kernel and the training loop read.
inline constexpr CpuPolicy kCpuPolicy{};

}  // namespace ember::detail
