#pragma once
// Internal: parallel_for over the shared OpenMP pool, and the per-thread denormal flags.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <utility>

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

namespace detail {
inline thread_local bool in_parallel_body = false;  // running a parallel_for body, on any thread
inline thread_local int thread_limit = 0;           // ScopedThreadLimit's, 0 for none
}  // namespace detail

// Whether the calling thread is running a parallel_for body: nested loops and products stay on it.
inline bool in_parallel_body() { return detail::in_parallel_body; }

// Caps the threads that parallel_for runs its chunks on from the calling thread, for its lifetime (the step
// tuner's one-thread mode). The split, and so every result, stays the same: only who runs the chunks changes.
class ScopedThreadLimit {
 public:
  explicit ScopedThreadLimit(int threads) : saved_(std::exchange(detail::thread_limit, threads)) {}
  ~ScopedThreadLimit() { detail::thread_limit = saved_; }
  ScopedThreadLimit(const ScopedThreadLimit&) = delete;
  ScopedThreadLimit& operator=(const ScopedThreadLimit&) = delete;

 private:
  int saved_;
};

// The number of contiguous chunks parallel_for(n, grain, ...) splits [0, n) into: at most the pool's threads,
// each of at least `grain` items; 1 inside a parallel_for body. It depends on nothing else, so the split
// (and any result built from per-chunk partials) is the same on every thread and under any thread limit.
inline int64_t parallel_chunks(int64_t n, int64_t grain) {
  if (n <= 0 || in_parallel_body()) return 1;
  return std::max<int64_t>(1, std::min<int64_t>(intra_op_threads(), (n + grain - 1) / std::max<int64_t>(grain, 1)));
}

// The threads parallel_for may run chunks on from the calling thread: its OpenMP limit (omp_get_max_threads:
// 1 on the input pipeline's workers, see data::detail::init_worker_thread) and its ScopedThreadLimit.
inline int parallel_threads() {
  const int omp = omp_get_max_threads();
  return detail::thread_limit > 0 ? std::min(detail::thread_limit, omp) : omp;
}

// Sets the calling thread's OpenMP limit (by which oneDNN and Eigen thread their work) for its lifetime.
class ScopedOpenMPThreads {
 public:
  explicit ScopedOpenMPThreads(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~ScopedOpenMPThreads() { omp_set_num_threads(saved_); }
  ScopedOpenMPThreads(const ScopedOpenMPThreads&) = delete;
  ScopedOpenMPThreads& operator=(const ScopedOpenMPThreads&) = delete;

 private:
  int saved_;
};

namespace detail {
// Marks the calling thread as running a parallel_for body. Where the body runs outside an OpenMP region (the
// chunks in turn on the calling thread), the thread's OpenMP limit drops to 1 meanwhile, so that a library
// the body calls (oneDNN, Eigen) runs on that thread alone, as it does inside a region.
class ParallelBody {
 public:
  explicit ParallelBody(bool in_region) : saved_threads_(in_region ? 0 : omp_get_max_threads()) {
    in_parallel_body = true;
    if (!in_region) omp_set_num_threads(1);
  }
  ~ParallelBody() {
    in_parallel_body = false;
    if (saved_threads_ > 0) omp_set_num_threads(saved_threads_);
  }
  ParallelBody(const ParallelBody&) = delete;
  ParallelBody& operator=(const ParallelBody&) = delete;

 private:
  // The OpenMP limit to restore; 0 inside a region, where it is left alone. (A std::optional of
  // ScopedOpenMPThreads did the same, but GCC 12 at -O1 saw its emplace read an unset member.)
  int saved_threads_;
};
}  // namespace detail

// Runs fn(chunk, begin, end) for each chunk t of parallel_chunks(n, grain), [n * t / chunks,
// n * (t + 1) / chunks): chunk t on OpenMP thread t when parallel_threads() allows one thread per chunk, all in
// order on the calling thread otherwise. The same n and grain give every call the same split, so a thread
// keeps working on the same items (and their bytes stay in its core's caches) from one call to the next.
// fn must not throw: validate before the loop.
template <class F>
void parallel_for_chunks(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  const int64_t chunks = parallel_chunks(n, grain);
  if (chunks <= 1) {
    fn(int64_t{0}, int64_t{0}, n);
    return;
  }
  if (parallel_threads() < chunks) {
    detail::ParallelBody body(false);
    for (int64_t t = 0; t < chunks; ++t) fn(t, n * t / chunks, n * (t + 1) / chunks);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    detail::ParallelBody body(true);
    // OpenMP may give fewer threads than asked: each takes every nt-th chunk, so the split stays the same.
    const int64_t nt = omp_get_num_threads();
    for (int64_t t = omp_get_thread_num(); t < chunks; t += nt) fn(t, n * t / chunks, n * (t + 1) / chunks);
  }
}

// Runs fn(begin, end) over [0, n) split as parallel_for_chunks does.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  parallel_for_chunks(n, grain, [&](int64_t, int64_t begin, int64_t end) { fn(begin, end); });
}

}  // namespace ember
