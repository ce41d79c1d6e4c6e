#pragma once
// Internal: parallel_for over the shared OpenMP pool, and the per-thread denormal flags.
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace ember {

// Threads of the intra-op pool (config::set_intra_op_parallelism_threads).
int intra_op_threads();
// Sets flush-to-zero and denormals-are-zero on the calling thread.
void set_denormal_flags();

// Element count below which an elementwise loop stays on the calling thread (waking the pool costs more).
inline constexpr int64_t kParallelGrain = 32768;

// The grain of a loop whose items each cost about work_per_item element operations: kParallelGrain of them.
inline int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(work_per_item, 1));
}

// Runs fn(begin, end) over [0, n) split in contiguous chunks of at least `grain` items, on at most the
// pool's threads and the calling thread's OpenMP limit (omp_get_max_threads: 1 on the input pipeline's
// workers, see data::detail::init_worker_thread). fn must not throw: validate before the loop.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  int threads = std::min(intra_op_threads(), omp_get_max_threads());
  int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (chunks <= 1 || omp_in_parallel()) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t b = n * t / nt, e = n * (t + 1) / nt;
    if (b < e) fn(b, e);
  }
}

}  // namespace ember
