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

// The number of contiguous chunks parallel_for(n, grain, ...) splits [0, n) into: at most the pool's threads
// and the calling thread's OpenMP limit (omp_get_max_threads: 1 on the input pipeline's workers, see
// data::detail::init_worker_thread), each of at least `grain` items; 1 inside a parallel region.
inline int64_t parallel_chunks(int64_t n, int64_t grain) {
  if (n <= 0 || omp_in_parallel()) return 1;
  const int threads = std::min(intra_op_threads(), omp_get_max_threads());
  return std::max<int64_t>(1, std::min<int64_t>(threads, (n + grain - 1) / std::max<int64_t>(grain, 1)));
}

// Runs fn(chunk, begin, end) for chunk t of parallel_chunks(n, grain), [n * t / chunks, n * (t + 1) / chunks),
// on OpenMP thread t. The same n and grain give every call the same split, so a thread keeps working on the
// same items (and their bytes stay in its core's caches) from one call to the next. fn must not throw:
// validate before the loop.
template <class F>
void parallel_for_chunks(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  const int64_t chunks = parallel_chunks(n, grain);
  if (chunks <= 1) {
    fn(int64_t{0}, int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t b = n * t / nt, e = n * (t + 1) / nt;
    if (b < e) fn(t, b, e);
  }
}

// Runs fn(begin, end) over [0, n) split as parallel_for_chunks does.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  parallel_for_chunks(n, grain, [&](int64_t, int64_t begin, int64_t end) { fn(begin, end); });
}

}  // namespace ember
