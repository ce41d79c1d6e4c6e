#pragma once
// The profiler (TF: tf.profiler.experimental): while it runs, every op at the dispatch point (eager or
// replayed from a graph), every Trace scope (fit's training steps, the data pipeline's stages, a user's
// own) is recorded with its thread, start and duration; stop() writes them as Chrome trace-event JSON,
// gzip-compressed, to <logdir>/plugins/profile/<run>/<host>.trace.json.gz (where TensorBoard's profile
// plugin looks; Perfetto and chrome://tracing open the file), and prints a table of the ops that took
// the time. When it is not running, each op pays one atomic load (and dispatch's thread-local
// nesting counter).
//
//   { profiler::Profile p("logs/profile"); model.fit(x, y, {...}); }     // RAII, like TF's Profile
//   profiler::start("logs"); ...; profiler::stop();                      // or explicitly
//   { profiler::Trace t("preprocess"); ... }                              // a named span of one's own
//
// Ops on an accelerator are timed as the host enqueues them (the kernels run later on the device's
// stream), so their durations on the host threads' tracks are launch costs. Their kernel times come from
// timing events recorded on the device's stream around each op (CUDA events), resolved at stop() and
// written on a track of the device's own ("GPU:0 kernels"); its timeline is aligned with the host's at the
// device's first op of the session, taken to start running as it was enqueued.
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace ember {
class Tensor;
}

namespace ember::profiler {

struct ProfilerOptions {
  // Prints the top-ops table (op, total time, calls, share of the ops' time) to stdout at stop().
  bool print_summary = true;
  // Rows of that table.
  int summary_rows = 15;
};

// Starts recording into logdir (created at stop()). A second start while one runs is FailedPrecondition.
void start(const std::string& logdir, ProfilerOptions options = {});
// Stops recording, writes the trace file and returns its path; FailedPrecondition when none runs, and the
// IO error (FailedPrecondition naming the path) when the file cannot be written.
std::string stop();
// Whether the profiler is recording.
bool active() noexcept;

// start() on construction, stop() on destruction (an error on stop is logged, not thrown).
class Profile {
 public:
  explicit Profile(const std::string& logdir, ProfilerOptions options = {});
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;
};

// A named span on this thread's timeline while the profiler runs (nothing otherwise); a step_num marks
// a training step, as TF's Trace("train", step_num=...) does.
class Trace {
 public:
  // `name` must outlive the Trace (a string literal); the std::string form copies it while profiling.
  explicit Trace(const char* name, std::optional<int64_t> step_num = std::nullopt);
  explicit Trace(std::string name, std::optional<int64_t> step_num = std::nullopt);
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

 private:
  void begin(std::optional<int64_t> step_num);
  std::string name_;
  const char* static_name_ = nullptr;
  std::optional<int64_t> step_num_;
  int64_t start_ns_ = -1;
};

namespace detail {

inline std::atomic<bool> g_active{false};
inline bool recording() noexcept { return g_active.load(std::memory_order_relaxed); }
// Nanoseconds on the profiler's clock.
int64_t now_ns() noexcept;

// Kernel timing on an accelerator's stream (the CUDA backend sets one as it loads). While profiling,
// dispatch marks the op's device stream just before and after each outermost op's kernels: mark() enqueues a
// timestamp and returns it. At stop(), elapsed_ns(device, a, b) waits for b and gives the device time from a
// to b (negative when b came first); release() frees a mark, each exactly once.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  virtual void* mark(int device) = 0;
  virtual int64_t elapsed_ns(int device, void* from, void* to) = 0;
  virtual void release(int device, void* mark) noexcept = 0;
};
// The accelerator's timer, or nullptr (none: the default); the caller keeps it alive while it is set.
void set_device_timer(DeviceTimer* timer) noexcept;
DeviceTimer* device_timer() noexcept;
// The two marks around one op's kernels on `device` (begin == nullptr: none). record_op takes them over.
struct DeviceSpan {
  int device = -1;
  void* begin = nullptr;
  void* end = nullptr;
};

// One op run at the dispatch point: its name, tensors, the device it ran on, when, and the bytes its outputs
// allocated. `nested`: run inside another op's kernel (left out of the table, which counts each op once).
// `span`: its kernels' marks on an accelerator's stream.
void record_op(const char* name, std::span<const Tensor> inputs, std::span<const Tensor> outputs, int64_t start_ns,
               int64_t end_ns, int64_t bytes_allocated, bool nested, DeviceSpan span = {});

}  // namespace detail
}  // namespace ember::profiler
