#include "framework/core/profiler.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "framework/core/error.h"
#include "framework/core/logging.h"
#include "framework/core/tensor.h"

namespace ember::profiler {

namespace {

// Shapes kept inline (no allocation while recording): up to kMaxShapes tensors of rank <= kMaxRank; larger
// ranks are shown as "rank N".
constexpr int kMaxShapes = 5;
constexpr int kMaxRank = 6;

struct CompactShape {
  int8_t rank = 0;
  std::array<int64_t, kMaxRank> dims{};
};

struct Event {
  int64_t start_ns = 0, end_ns = 0;
  const char* static_name = nullptr;  // ops and Trace(const char*)
  std::string name;                   // Trace(std::string)
  bool is_op = false, nested = false;
  std::optional<int64_t> step_num;
  // Ops only.
  int8_t num_inputs = 0, num_outputs = 0;  // of the shapes kept: inputs first, then outputs
  int16_t total_inputs = 0, total_outputs = 0;
  std::array<CompactShape, kMaxShapes> shapes{};
  DType dtype = DType::Float32;
  Device device = Device::cpu();
  int64_t bytes = 0;
  detail::DeviceSpan span;  // marks around its kernels on an accelerator (released at stop or start)

  const char* display_name() const { return static_name ? static_name : name.c_str(); }
};

struct ThreadBuffer {
  std::mutex mu;
  int tid = 0;
  std::vector<Event> events;
};

struct Session {
  std::string logdir;
  ProfilerOptions options;
  int64_t start_ns = 0;
  int starting_tid = 0;
};

std::atomic<detail::DeviceTimer*> g_device_timer{nullptr};

// Frees the device marks of events that are dropped unresolved.
void release_spans(std::vector<Event>& events) noexcept {
  detail::DeviceTimer* timer = g_device_timer.load(std::memory_order_acquire);
  for (Event& e : events) {
    if (timer && e.span.begin) timer->release(e.span.device, e.span.begin);
    if (timer && e.span.end) timer->release(e.span.device, e.span.end);
    e.span = {};
  }
}

// One op's kernels on a device's track: start on the host's clock (see profiler.h) and duration.
struct KernelEvent {
  int device = 0;
  int host_tid = 0;
  int64_t start_ns = 0, end_ns = 0;
  const char* name = nullptr;
  std::string device_name;
};

// Resolves the events' device marks into kernel events (waiting for the devices to reach them) and frees
// the marks. Each device's timeline starts at its first op of the session (earliest host start): that op's
// kernels are taken to begin as it was enqueued; every other op's offset is the device time from there.
std::vector<KernelEvent> resolve_spans(std::vector<std::pair<int, std::vector<Event>>>& threads) {
  std::vector<KernelEvent> out;
  detail::DeviceTimer* timer = g_device_timer.load(std::memory_order_acquire);
  if (!timer) return out;
  std::map<int, std::vector<std::pair<int, Event*>>> by_device;
  for (auto& [tid, events] : threads)
    for (Event& e : events)
      if (e.span.begin && e.span.end) by_device[e.span.device].emplace_back(tid, &e);
  for (auto& [device, list] : by_device) {
    std::stable_sort(list.begin(), list.end(),
                     [](const auto& a, const auto& b) { return a.second->start_ns < b.second->start_ns; });
    const Event& anchor = *list.front().second;
    try {
      for (const auto& [tid, e] : list) {
        KernelEvent k;
        k.device = device;
        k.host_tid = tid;
        k.start_ns = anchor.start_ns + timer->elapsed_ns(device, anchor.span.begin, e->span.begin);
        k.end_ns = k.start_ns + std::max<int64_t>(0, timer->elapsed_ns(device, e->span.begin, e->span.end));
        k.name = e->display_name();
        k.device_name = e->device.to_string();
        out.push_back(std::move(k));
      }
    } catch (const std::exception& ex) {
      logging::warn(std::string("profiler: the kernel times of device ") + std::to_string(device) +
                    " are left out: " + ex.what());
      std::erase_if(out, [device](const KernelEvent& k) { return k.device == device; });
    }
  }
  for (auto& [tid, events] : threads) release_spans(events);
  return out;
}

std::mutex g_registry_mu;
std::vector<std::shared_ptr<ThreadBuffer>>& registry() {
  static std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  return buffers;
}
std::optional<Session>& session() {
  static std::optional<Session> s;
  return s;
}

ThreadBuffer& this_thread_buffer() {
  // The registry keeps the buffer alive after its thread ends, so a pipeline worker's events are written.
  thread_local std::shared_ptr<ThreadBuffer> buffer = [] {
    auto b = std::make_shared<ThreadBuffer>();
    std::lock_guard<std::mutex> lock(g_registry_mu);
    b->tid = static_cast<int>(registry().size()) + 1;
    registry().push_back(b);
    return b;
  }();
  return *buffer;
}

void append(Event&& e) {
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mu);
  if (b.events.capacity() == b.events.size()) b.events.reserve(std::max<size_t>(1024, 2 * b.events.size()));
  b.events.push_back(std::move(e));
}

CompactShape compact(const Shape& s) {
  CompactShape c;
  c.rank = static_cast<int8_t>(std::min<int64_t>(s.rank(), 127));
  for (int64_t i = 0; i < std::min<int64_t>(s.rank(), kMaxRank); ++i) c.dims[static_cast<size_t>(i)] = s[i];
  return c;
}

void append_shape(std::string& out, const CompactShape& s) {
  if (s.rank > kMaxRank) {
    out += "rank " + std::to_string(s.rank);
    return;
  }
  out += '[';
  for (int i = 0; i < s.rank; ++i) {
    if (i) out += ',';
    out += std::to_string(s.dims[static_cast<size_t>(i)]);
  }
  out += ']';
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

// Microseconds since the session started, as the trace-event format's ts and dur want them.
std::string micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", static_cast<double>(ns) / 1000.0);
  return buf;
}

std::string shapes_text(const Event& e, int first, int count, int total) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    if (i) out += ' ';
    append_shape(out, e.shapes[static_cast<size_t>(first + i)]);
  }
  if (total > count) out += " ...";
  return out;
}

std::string trace_json(const std::vector<std::pair<int, std::vector<Event>>>& threads,
                       const std::vector<KernelEvent>& kernels, const Session& s) {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  out += R"json({"ph":"M","name":"process_name","pid":1,"args":{"name":"Ember (host)"}})json";
  for (const auto& [tid, events] : threads) {
    out += ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":";
    append_json_string(out, tid == s.starting_tid ? std::string("main") : "thread " + std::to_string(tid));
    out += "}}";
    for (const Event& e : events) {
      out += ",\n{\"ph\":\"X\",\"cat\":";
      out += e.is_op ? "\"op\"" : "\"trace\"";
      out += ",\"name\":";
      append_json_string(out, e.display_name());
      out += ",\"pid\":1,\"tid\":" + std::to_string(tid) + ",\"ts\":" + micros(e.start_ns - s.start_ns) +
             ",\"dur\":" + micros(e.end_ns - e.start_ns);
      if (e.is_op) {
        out += ",\"args\":{\"inputs\":";
        append_json_string(out, shapes_text(e, 0, e.num_inputs, e.total_inputs));
        out += ",\"outputs\":";
        append_json_string(out, shapes_text(e, e.num_inputs, e.num_outputs, e.total_outputs));
        out += ",\"dtype\":";
        append_json_string(out, dtype_name(e.dtype));
        out += ",\"device\":";
        append_json_string(out, e.device.to_string());
        out += ",\"bytes_allocated\":" + std::to_string(e.bytes) + (e.nested ? ",\"nested\":true" : "") + "}";
      } else if (e.step_num) {
        out += ",\"args\":{\"step_num\":" + std::to_string(*e.step_num) + "}";
      }
      out += "}";
    }
  }
  // The devices' tracks: one process per device (pid 100 + its index), its stream as the one thread.
  std::map<int, std::string> devices;
  for (const KernelEvent& k : kernels) devices.emplace(k.device, k.device_name);
  for (const auto& [device, name] : devices) {
    const std::string pid = std::to_string(100 + device);
    out += ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + pid + ",\"args\":{\"name\":";
    append_json_string(out, name + " kernels");
    out += "}},\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + pid + ",\"tid\":1,\"args\":{\"name\":\"stream\"}}";
  }
  for (const KernelEvent& k : kernels) {
    out += ",\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":";
    append_json_string(out, k.name);
    out += ",\"pid\":" + std::to_string(100 + k.device) + ",\"tid\":1,\"ts\":" + micros(k.start_ns - s.start_ns) +
           ",\"dur\":" + micros(k.end_ns - k.start_ns) + ",\"args\":{\"host_tid\":" + std::to_string(k.host_tid) + "}}";
  }
  out += "\n]}\n";
  return out;
}

std::string summary_table(const std::vector<std::pair<int, std::vector<Event>>>& threads, const Session& s,
                          int64_t stop_ns) {
  struct Row {
    int64_t ns = 0, calls = 0;
  };
  std::map<std::string, Row> rows;
  int64_t total_ns = 0, total_calls = 0;
  for (const auto& [tid, events] : threads)
    for (const Event& e : events) {
      if (!e.is_op || e.nested) continue;
      Row& r = rows[e.display_name()];
      r.ns += e.end_ns - e.start_ns;
      ++r.calls;
      total_ns += e.end_ns - e.start_ns;
      ++total_calls;
    }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  std::ostringstream os;
  char line[160];
  std::snprintf(line, sizeof(line), "Profile: %lld ops took %.3f ms of %.3f ms profiled\n",
                static_cast<long long>(total_calls), static_cast<double>(total_ns) / 1e6,
                static_cast<double>(stop_ns - s.start_ns) / 1e6);
  os << line;
  std::snprintf(line, sizeof(line), "  %-40s %12s %10s %8s\n", "op", "time (ms)", "calls", "share");
  os << line;
  const size_t n = std::min(sorted.size(), static_cast<size_t>(std::max(0, s.options.summary_rows)));
  for (size_t i = 0; i < n; ++i) {
    const auto& [name, r] = sorted[i];
    std::snprintf(line, sizeof(line), "  %-40s %12.3f %10lld %7.1f%%\n", name.c_str(), static_cast<double>(r.ns) / 1e6,
                  static_cast<long long>(r.calls), total_ns ? 100.0 * static_cast<double>(r.ns) / total_ns : 0.0);
    os << line;
  }
  if (sorted.size() > n) os << "  (" << sorted.size() - n << " more ops)\n";
  return os.str();
}

std::string hostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// <logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>, TF's run folder (local time), made unique with a suffix.
std::filesystem::path run_dir(const std::string& logdir) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y_%m_%d_%H_%M_%S", &tm);
  const std::filesystem::path base = std::filesystem::path(logdir) / "plugins" / "profile";
  std::filesystem::path dir = base / stamp;
  for (int i = 1; std::filesystem::exists(dir); ++i) dir = base / (std::string(stamp) + "_" + std::to_string(i));
  return dir;
}

void write_gzip(const std::filesystem::path& path, const std::string& text) {
  // Written beside its final name and renamed, so a failed write leaves no truncated trace.
  const std::string tmp = path.string() + ".tmp";
  gzFile f = gzopen(tmp.c_str(), "wb");
  EMBER_CHECK(f != nullptr, FailedPrecondition) << "profiler: cannot create " << tmp << ": " << std::strerror(errno);
  const bool written = gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size());
  const bool closed = gzclose(f) == Z_OK;
  if (!written || !closed) {
    std::remove(tmp.c_str());
    throw make_error<FailedPrecondition>("profiler: writing ", tmp, " failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw make_error<FailedPrecondition>("profiler: cannot rename ", tmp, " to ", path.string(), ": ", ec.message());
  }
}

}  // namespace

namespace detail {

void set_device_timer(DeviceTimer* timer) noexcept { g_device_timer.store(timer, std::memory_order_release); }
DeviceTimer* device_timer() noexcept { return g_device_timer.load(std::memory_order_acquire); }

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record_op(const char* name, std::span<const Tensor> inputs, std::span<const Tensor> outputs, int64_t start_ns,
               int64_t end_ns, int64_t bytes_allocated, bool nested, DeviceSpan span) {
  Event e;
  e.span = span;
  e.is_op = true;
  e.static_name = name;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.nested = nested;
  e.bytes = bytes_allocated;
  e.total_inputs = static_cast<int16_t>(std::min<size_t>(inputs.size(), 32767));
  e.total_outputs = static_cast<int16_t>(std::min<size_t>(outputs.size(), 32767));
  int k = 0;
  for (const Tensor& t : inputs) {
    if (k == kMaxShapes - 1 && !outputs.empty()) break;  // keep a slot for the first output
    if (k == kMaxShapes) break;
    e.shapes[static_cast<size_t>(k++)] = t.defined() ? compact(t.shape()) : CompactShape{};
  }
  e.num_inputs = static_cast<int8_t>(k);
  for (const Tensor& t : outputs) {
    if (k == kMaxShapes) break;
    e.shapes[static_cast<size_t>(k++)] = t.defined() ? compact(t.shape()) : CompactShape{};
  }
  e.num_outputs = static_cast<int8_t>(k - e.num_inputs);
  const Tensor* first = !outputs.empty() && outputs[0].defined() ? &outputs[0]
                        : !inputs.empty() && inputs[0].defined() ? &inputs[0]
                                                                 : nullptr;
  if (first) {
    e.dtype = first->dtype();
    e.device = first->device();
  }
  append(std::move(e));
}

}  // namespace detail

bool active() noexcept { return detail::recording(); }

void start(const std::string& logdir, ProfilerOptions options) {
  EMBER_CHECK(!logdir.empty(), InvalidArgument) << "profiler.start: logdir is empty; give the folder to write into";
  const int tid = this_thread_buffer().tid;
  std::lock_guard<std::mutex> lock(g_registry_mu);
  EMBER_CHECK(!session(), FailedPrecondition)
      << "profiler.start: the profiler is already running (into " << session()->logdir
      << "); stop it before starting another";
  for (const auto& b : registry()) {
    std::lock_guard<std::mutex> buffer_lock(b->mu);
    release_spans(b->events);  // recorded after the last stop()
    b->events.clear();
  }
  session() = Session{logdir, options, detail::now_ns(), tid};
  detail::g_active.store(true, std::memory_order_release);
}

std::string stop() {
  const int64_t stop_ns = detail::now_ns();
  Session s;
  std::vector<std::pair<int, std::vector<Event>>> threads;
  {
    std::lock_guard<std::mutex> lock(g_registry_mu);
    EMBER_CHECK(session().has_value(), FailedPrecondition) << "profiler.stop: the profiler is not running";
    detail::g_active.store(false, std::memory_order_release);
    s = std::move(*session());
    session().reset();
    for (const auto& b : registry()) {
      std::lock_guard<std::mutex> buffer_lock(b->mu);
      if (!b->events.empty()) threads.emplace_back(b->tid, std::move(b->events));
      b->events = {};
    }
  }
  const std::vector<KernelEvent> kernels = resolve_spans(threads);  // frees the device marks whatever follows
  const std::filesystem::path dir = run_dir(s.logdir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  EMBER_CHECK(!ec, FailedPrecondition) << "profiler.stop: cannot create " << dir.string() << ": " << ec.message();
  const std::filesystem::path path = dir / (hostname() + ".trace.json.gz");
  write_gzip(path, trace_json(threads, kernels, s));
  if (s.options.print_summary) std::cout << summary_table(threads, s, stop_ns) << std::flush;
  return path.string();
}

Profile::Profile(const std::string& logdir, ProfilerOptions options) { start(logdir, options); }

Profile::~Profile() {
  try {
    stop();
  } catch (const std::exception& e) {
    logging::warn(std::string("profiler: ") + e.what());
  }
}

Trace::Trace(const char* name, std::optional<int64_t> step_num) : static_name_(name) { begin(step_num); }
Trace::Trace(std::string name, std::optional<int64_t> step_num) {
  if (!detail::recording()) return;
  name_ = std::move(name);
  begin(step_num);
}

void Trace::begin(std::optional<int64_t> step_num) {
  if (!detail::recording()) return;
  step_num_ = step_num;
  start_ns_ = detail::now_ns();
}

Trace::~Trace() {
  if (start_ns_ < 0 || !detail::recording()) return;
  Event e;
  e.start_ns = start_ns_;
  e.end_ns = detail::now_ns();
  e.static_name = static_name_;
  e.name = std::move(name_);
  e.step_num = step_num_;
  append(std::move(e));
}

}  // namespace ember::profiler
