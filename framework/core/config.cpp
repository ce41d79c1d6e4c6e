#include "framework/core/config.h"

#include <pmmintrin.h>
#include <xmmintrin.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include "framework/core/error.h"
#include "framework/core/logging.h"
#include "framework/core/parallel.h"
#include "framework/core/thread_count.h"

namespace ember {

namespace detail {

EnvThreadCount parse_thread_count(const char* name, const char* value) {
  if (value == nullptr) return {};
  std::string text(value);
  // OpenMP lists one count per nesting level ("4,2"); the pool is the outermost level.
  if (std::strcmp(name, "OMP_NUM_THREADS") == 0) text = text.substr(0, text.find(','));
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  const auto first = std::find_if_not(text.begin(), text.end(), blank);
  const auto last = std::find_if_not(text.rbegin(), text.rend(), blank).base();
  const std::string digits = first < last ? std::string(first, last) : std::string();
  const auto bad = [&] {
    return EnvThreadCount{std::nullopt, std::string(name) + "='" + value +
                                            "' is not a thread count (expected a positive integer, or 0 for the "
                                            "default); ignoring it"};
  };
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return bad();
  errno = 0;
  const long n = std::strtol(digits.c_str(), nullptr, 10);
  if (errno == ERANGE || n > std::numeric_limits<int>::max()) return bad();
  if (n == 0) return {};
  return {static_cast<int>(n), {}};
}

int default_intra_op_threads(const std::function<const char*(const char*)>& getenv, int hardware_threads,
                             const std::function<void(const std::string&)>& warn) {
  for (const char* name : {"EMBER_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const EnvThreadCount count = parse_thread_count(name, getenv(name));
    if (!count.problem.empty()) warn(count.problem);
    if (count.threads) return *count.threads;
  }
  return std::max(1, hardware_threads);
}

int default_intra_op_threads() {
  static const int n = default_intra_op_threads(
      [](const char* name) { return std::getenv(name); }, static_cast<int>(std::thread::hardware_concurrency()),
      [](const std::string& problem) { logging::warn(problem); });
  return n;
}

}  // namespace detail

namespace {
std::atomic<bool> g_determinism{false};
std::atomic<bool> g_tf32{true};

int init_pool(int n) {
  omp_set_dynamic(0);
  omp_set_num_threads(n);
  // The flags are per thread: set them on every pool worker as well as the caller.
  set_denormal_flags();
#pragma omp parallel num_threads(n)
  set_denormal_flags();
  return n;
}

std::atomic<int>& pool_size() {
  static std::atomic<int> n{init_pool(detail::default_intra_op_threads())};
  return n;
}
}  // namespace

int intra_op_threads() { return pool_size().load(std::memory_order_relaxed); }

void set_denormal_flags() {
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
}

namespace config {

void set_intra_op_parallelism_threads(int n) {
  EMBER_CHECK(n >= 0, InvalidArgument) << "set_intra_op_parallelism_threads: expected n >= 0, got " << n;
  if (n == 0) n = detail::default_intra_op_threads();
  pool_size().store(init_pool(n));
}

int get_intra_op_parallelism_threads() { return intra_op_threads(); }

MemoryInfo memory_info(Device device) { return allocator_for(device).memory_info(); }

void reset_memory_stats(Device device) { allocator_for(device).reset_peak(); }

std::vector<PhysicalDevice> list_physical_devices(const std::string& device_type) {
  EMBER_CHECK(device_type.empty() || device_type == "CPU" || device_type == "GPU", InvalidArgument)
      << "list_physical_devices: unknown device type '" << device_type << "' (expected \"CPU\", \"GPU\" or \"\")";
  std::vector<PhysicalDevice> out;
  if (device_type.empty() || device_type == "CPU") out.push_back({"/physical_device:CPU:0", "CPU"});
  if (device_type.empty() || device_type == "GPU")
    for (int i = 0; i < device_count(DeviceType::CUDA); ++i)
      out.push_back({"/physical_device:GPU:" + std::to_string(i), "GPU"});
  return out;
}

bool is_built_with_cuda() {
#if defined(EMBER_WITH_CUDA)
  return true;
#else
  return false;
#endif
}

void set_memory_growth(Device device, bool enable) { allocator_for(device).set_memory_growth(enable); }
bool get_memory_growth(Device device) { return allocator_for(device).memory_growth(); }
void set_memory_limit(Device device, int64_t bytes) {
  EMBER_CHECK(bytes > 0, InvalidArgument) << "set_memory_limit: expected a positive byte count, got " << bytes;
  allocator_for(device).set_memory_limit(bytes);
}

void enable_tensor_float_32_execution(bool enabled) { g_tf32 = enabled; }
bool tensor_float_32_execution_enabled() { return g_tf32; }

void enable_op_determinism() { g_determinism = true; }
bool is_op_determinism_enabled() { return g_determinism; }

}  // namespace config
}  // namespace ember
