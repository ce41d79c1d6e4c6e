#pragma once
// Internal: the intra-op pool's size when nothing sets it at run time, from the environment as TF and PyTorch
// users expect: EMBER_NUM_THREADS, else OMP_NUM_THREADS (its first, outermost level), else the hardware threads.
// Defined in config.cpp, beside the pool it sizes.
#include <functional>
#include <optional>
#include <string>

namespace ember::detail {

// A thread count parsed from one environment variable's value.
struct EnvThreadCount {
  std::optional<int> threads;  // a positive count; none where the value is absent, 0 ("the default") or bad
  std::string problem;         // why a present value was not used; empty where it was used, absent or 0
};

// Parses `value` of the variable `name`: a positive decimal integer, blanks around it allowed; for
// OMP_NUM_THREADS the first entry of a comma-separated list (OpenMP's per-nesting-level list). 0 means the
// default, as TF's TF_NUM_INTRAOP_THREADS=0 does. Anything else is a problem, and the value is not used.
EnvThreadCount parse_thread_count(const char* name, const char* value);

// The default pool size from the variables `getenv` returns (nullptr: unset) and the hardware's thread
// count. A bad value is skipped, as TF skips a bad TF_NUM_INTRAOP_THREADS, and `warn` is told why (TF is
// silent there; PyTorch warns for a bad OMP_NUM_THREADS, which is kinder to a typo).
int default_intra_op_threads(const std::function<const char*(const char*)>& getenv, int hardware_threads,
                             const std::function<void(const std::string&)>& warn);

// The process's default, read once (later changes to the environment are not seen, as in TF): the
// environment's count, else std::thread::hardware_concurrency(). Bad values are warned about on stderr once.
int default_intra_op_threads();

}  // namespace ember::detail
