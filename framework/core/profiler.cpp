#include "framework/core/profiler.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "framework/core/error.h"
#include "framework/core/logging.h"
#include "framework/core/tensor.h"

namespace ember::profiler {

namespace {

// Recording is the hot path (every op while profiling, a step of tiny ops has a hundred): each thread appends
// compact records to blocks of its own, with no lock and no allocation but a new block's; all formatting
// waits for stop().

// An op keeps up to kMaxShapes tensors' shapes (inputs first, a slot kept for the first output); those of rank
// above kMaxRank are shown as "rank N".
constexpr int kMaxShapes = 5;
constexpr int kMaxRank = 6;

// One op or span in a thread's stream, followed by its kept shapes' dimensions (int64 each, ranks above
// kMaxRank contributing none) or, for a span named by a std::string, by the name's characters.
struct Record {
  uint32_t size = 0;         // bytes with what follows, a multiple of 8; 0 ends its block's records
  uint32_t name_length = 0;  // characters following the record when `name` is null
  const char* name = nullptr;
  int64_t start_ns = 0, end_ns = 0;
  int64_t value = 0;  // an op's bytes allocated, a span's step number
  detail::DeviceSpan span;  // an op's marks around its kernels on an accelerator (released at stop or start)
  bool is_op = false, nested = false, has_step = false;
  int8_t num_inputs = 0, num_outputs = 0;  // shapes kept: inputs first, then outputs
  int8_t ranks[kMaxShapes] = {};
  int16_t total_inputs = 0, total_outputs = 0;
  DType dtype = DType::Float32;
  DeviceType device_type = DeviceType::CPU;
  int32_t device_index = 0;
};
static_assert(sizeof(Record) % 8 == 0 && alignof(Record) <= 8);

// Names longer than this are cut (a record must fit in a block).
constexpr size_t kMaxNameLength = 4096;

const int64_t* dims_of(const Record& r) {
  return std::launder(reinterpret_cast<const int64_t*>(reinterpret_cast<const unsigned char*>(&r) + sizeof(Record)));
}
std::string_view name_of(const Record& r) {
  if (r.name) return r.name;
  return {reinterpret_cast<const char*>(&r) + sizeof(Record), r.name_length};
}
Device device_of(const Record& r) { return Device(r.device_type, r.device_index); }

struct Block {
  static constexpr size_t kBytes = (64 << 10) - 64;
  Block* next = nullptr;  // set by the writer before it publishes a record there
  alignas(8) unsigned char bytes[kBytes];
};

// Blocks read past, for threads to reuse: a profile's blocks are touched (faulted in) once, not every
// session. Up to kPooledBlocks (16 MiB) stay after stop().
constexpr size_t kPooledBlocks = 256;
std::mutex g_pool_mu;
std::vector<Block*>& pool() {
  static auto* blocks = new std::vector<Block*>;  // never destroyed, as the registry
  return *blocks;
}
Block* take_block() {
  {
    std::lock_guard<std::mutex> lock(g_pool_mu);
    if (!pool().empty()) {
      Block* b = pool().back();
      pool().pop_back();
      b->next = nullptr;
      return b;
    }
  }
  return new Block;
}
void give_blocks(std::vector<Block*>& blocks) noexcept {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  for (Block* b : blocks) {
    if (pool().size() < kPooledBlocks)
      pool().push_back(b);
    else
      delete b;
  }
  blocks.clear();
}

// One thread's stream of records: a single writer (the thread) appends to its chain of blocks and publishes
// a count; the reader (start() and stop(), under g_mu) reads up to the count it acquires.
struct ThreadBuffer {
  int tid = 0;
  // The thread's own.
  Block* write_block = nullptr;
  size_t write_pos = 0;
  uint64_t written = 0;
  // Shared: records finished (release), and whether the thread has ended (after its last record).
  std::atomic<uint64_t> published{0};
  std::atomic<bool> exited{false};
  // The reader's, under g_mu.
  Block* read_block = nullptr;
  size_t read_pos = 0;
  uint64_t consumed = 0;
};

struct Session {
  std::string logdir;
  ProfilerOptions options;
  int64_t start_ns = 0;
  int starting_tid = 0;
};

std::atomic<detail::DeviceTimer*> g_device_timer{nullptr};

// Guards the registry, the session and the readers' side of every buffer; stop() holds it throughout, as the
// records it writes out live in the buffers' blocks.
std::mutex g_mu;
// Never destroyed: a thread may end (and mark its buffer) while static destructors run.
std::vector<std::unique_ptr<ThreadBuffer>>& registry() {
  static auto* buffers = new std::vector<std::unique_ptr<ThreadBuffer>>;
  return *buffers;
}
std::optional<Session>& session() {
  static std::optional<Session> s;
  return s;
}

thread_local ThreadBuffer* t_buffer = nullptr;
thread_local bool t_ended = false;

ThreadBuffer* register_this_thread() {
  auto buffer = std::make_unique<ThreadBuffer>();
  buffer->write_block = buffer->read_block = take_block();
  ThreadBuffer* b = buffer.get();
  {
    std::lock_guard<std::mutex> lock(g_mu);
    static int next_tid = 0;
    b->tid = ++next_tid;
    registry().push_back(std::move(buffer));
  }
  // The registry keeps the buffer after its thread ends, so that a pipeline worker's records are written; the
  // next drain frees it. What the thread runs after this mark (other thread-locals' destructors) is not recorded.
  struct ExitMark {
    ThreadBuffer* b;
    ~ExitMark() {
      b->exited.store(true, std::memory_order_release);
      t_buffer = nullptr;
      t_ended = true;
    }
  };
  thread_local ExitMark mark{b};
  return b;
}

// This thread's buffer, registered at its first record; none once the thread's end has been marked.
ThreadBuffer* this_thread_buffer() {
  if (!t_buffer && !t_ended) t_buffer = register_this_thread();
  return t_buffer;
}

// Room for a record of `bytes` (a multiple of 8, at most a block) at the end of the thread's stream.
unsigned char* reserve(ThreadBuffer& b, size_t bytes) {
  if (Block::kBytes - b.write_pos < bytes) {
    if (Block::kBytes - b.write_pos >= sizeof(Record)) new (b.write_block->bytes + b.write_pos) Record{};  // the end
    Block* next = take_block();
    b.write_block->next = next;
    b.write_block = next;
    b.write_pos = 0;
  }
  return b.write_block->bytes + b.write_pos;
}

// A record of `bytes` at the end of the thread's stream, for the caller to fill in and publish().
Record& add_record(ThreadBuffer& b, size_t bytes) {
  Record* r = new (reserve(b, bytes)) Record;
  r->size = static_cast<uint32_t>(bytes);
  return *r;
}

// Makes the thread's last record visible to readers.
void publish(ThreadBuffer& b, const Record& r) {
  b.write_pos += r.size;
  b.published.store(++b.written, std::memory_order_release);
}

// The record at the reader's position, moving to the next block (and handing the one read past to `finished`)
// where this one's records end. Only called while a published record remains.
const Record& next_record(ThreadBuffer& b, std::vector<Block*>& finished) {
  const auto at = [&b] { return std::launder(reinterpret_cast<const Record*>(b.read_block->bytes + b.read_pos)); };
  if (Block::kBytes - b.read_pos < sizeof(Record) || at()->size == 0) {
    finished.push_back(b.read_block);
    b.read_block = b.read_block->next;
    b.read_pos = 0;
  }
  const Record& r = *at();
  b.read_pos += r.size;
  ++b.consumed;
  return r;
}

// Frees a record's device marks, each exactly once (a record is read once).
void release_marks(detail::DeviceTimer* timer, const Record& r) noexcept {
  if (timer && r.span.begin) timer->release(r.span.device, r.span.begin);
  if (timer && r.span.end) timer->release(r.span.device, r.span.end);
}

// A thread's records read at stop(), pointing into its blocks.
struct ThreadRecords {
  int tid = 0;
  std::vector<const Record*> records;
};

// Reads every buffer's records published since the last drain (kept when `keep`, else their device marks are
// freed), hands the blocks read past to `finished` and frees the buffers of threads that have ended.
std::vector<ThreadRecords> drain(bool keep, std::vector<Block*>& finished) {
  std::vector<ThreadRecords> out;
  detail::DeviceTimer* timer = g_device_timer.load(std::memory_order_acquire);
  std::erase_if(registry(), [&](std::unique_ptr<ThreadBuffer>& b) {
    const bool exited = b->exited.load(std::memory_order_acquire);
    const uint64_t end = b->published.load(std::memory_order_acquire);
    ThreadRecords t{b->tid, {}};
    while (b->consumed < end) {
      const Record& r = next_record(*b, finished);
      if (keep) {
        t.records.push_back(&r);
      } else {
        release_marks(timer, r);
      }
    }
    if (!t.records.empty()) out.push_back(std::move(t));
    if (!exited) return false;
    finished.push_back(b->read_block);  // its last block (the one the thread wrote into last)
    return true;
  });
  return out;
}

// Frees the device marks of the records read at stop().
void release_spans(const std::vector<ThreadRecords>& threads) noexcept {
  detail::DeviceTimer* timer = g_device_timer.load(std::memory_order_acquire);
  for (const ThreadRecords& t : threads)
    for (const Record* r : t.records) release_marks(timer, *r);
}

int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The profiler's clock, read twice an op. The steady clock costs 25-35 ns a reading on the machines measured;
// where the kernel keeps its own time with the CPU's time-stamp counter (clocksource "tsc": constant rate,
// synchronised across cores), reading the counter costs a third of that. Its ticks become the steady clock's
// nanoseconds through the rate between two (counter, steady clock) readings, the library's load and the
// session's start (at least kCalibrationNs apart); a session keeps one rate throughout.
#if defined(__x86_64__)
struct ClockReading {
  uint64_t tsc = 0;
  int64_t ns = 0;
};
// The tightest of a few readings (a thread preempted between the two clocks would skew one).
ClockReading read_clocks() noexcept {
  ClockReading best;
  uint64_t best_gap = ~uint64_t{0};
  for (int i = 0; i < 5; ++i) {
    const uint64_t before = __rdtsc();
    const int64_t ns = steady_ns();
    const uint64_t after = __rdtsc();
    if (after - before < best_gap) {
      best_gap = after - before;
      best = {before + (after - before) / 2, ns};
    }
  }
  return best;
}
const ClockReading g_load_clocks = read_clocks();
constexpr int64_t kCalibrationNs = 20'000'000;
std::atomic<bool> g_use_tsc{false};
std::atomic<uint64_t> g_tsc_base{0};
std::atomic<int64_t> g_ns_base{0};
std::atomic<double> g_ns_per_tick{0};

// Sets the counter's rate for a session about to start (sleeping out the rest of kCalibrationNs when the library
// loaded more recently), or leaves the steady clock in use where the kernel does not keep time by the counter.
void calibrate_clock() {
  static const bool kernel_uses_tsc = [] {
    std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string source;
    return static_cast<bool>(f >> source) && source == "tsc";
  }();
  if (!kernel_uses_tsc) return;
  const int64_t wait = g_load_clocks.ns + kCalibrationNs - steady_ns();
  if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
  const ClockReading now = read_clocks();
  g_ns_per_tick.store(static_cast<double>(now.ns - g_load_clocks.ns) / static_cast<double>(now.tsc - g_load_clocks.tsc),
                      std::memory_order_relaxed);
  g_tsc_base.store(now.tsc, std::memory_order_relaxed);
  g_ns_base.store(now.ns, std::memory_order_relaxed);
  g_use_tsc.store(true, std::memory_order_relaxed);
}
#else
void calibrate_clock() {}
#endif

// One op's kernels on a device's track: start on the host's clock (see profiler.h) and duration.
struct KernelEvent {
  int device = 0;
  int host_tid = 0;
  int64_t start_ns = 0, end_ns = 0;
  std::string_view name;
  std::string device_name;
};

// Resolves the records' device marks into kernel events (waiting for the devices to reach them). Each device's
// timeline starts at its first op of the session (earliest host start): that op's kernels are taken to begin
// as it was enqueued; every other op's offset is the device time from there.
std::vector<KernelEvent> resolve_spans(const std::vector<ThreadRecords>& threads) {
  std::vector<KernelEvent> out;
  detail::DeviceTimer* timer = g_device_timer.load(std::memory_order_acquire);
  if (!timer) return out;
  std::map<int, std::vector<std::pair<int, const Record*>>> by_device;
  for (const ThreadRecords& t : threads)
    for (const Record* r : t.records)
      if (r->span.begin && r->span.end) by_device[r->span.device].emplace_back(t.tid, r);
  for (auto& [device, list] : by_device) {
    std::stable_sort(list.begin(), list.end(),
                     [](const auto& a, const auto& b) { return a.second->start_ns < b.second->start_ns; });
    const Record& anchor = *list.front().second;
    try {
      for (const auto& [tid, r] : list) {
        KernelEvent k;
        k.device = device;
        k.host_tid = tid;
        k.start_ns = anchor.start_ns + timer->elapsed_ns(device, anchor.span.begin, r->span.begin);
        k.end_ns = k.start_ns + std::max<int64_t>(0, timer->elapsed_ns(device, r->span.begin, r->span.end));
        k.name = name_of(*r);
        k.device_name = device_of(*r).to_string();
        out.push_back(std::move(k));
      }
    } catch (const std::exception& ex) {
      logging::warn(std::string("profiler: the kernel times of device ") + std::to_string(device) +
                    " are left out: " + ex.what());
      std::erase_if(out, [device](const KernelEvent& k) { return k.device == device; });
    }
  }
  return out;
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

// "[2,3] [3,4]": the kept shapes [first, first + count) of an op's record, " ..." when `total` had more.
std::string shapes_text(const Record& r, int first, int count, int total) {
  const int64_t* dims = dims_of(r);
  for (int i = 0; i < first; ++i)
    if (r.ranks[i] <= kMaxRank) dims += r.ranks[i];
  std::string out;
  for (int i = first; i < first + count; ++i) {
    if (i > first) out += ' ';
    if (r.ranks[i] > kMaxRank) {
      out += "rank " + std::to_string(r.ranks[i]);
      continue;
    }
    out += '[';
    for (int d = 0; d < r.ranks[i]; ++d) {
      if (d) out += ',';
      out += std::to_string(*dims++);
    }
    out += ']';
  }
  if (total > count) out += " ...";
  return out;
}

std::string trace_json(const std::vector<ThreadRecords>& threads, const std::vector<KernelEvent>& kernels,
                       const Session& s) {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  out += R"json({"ph":"M","name":"process_name","pid":1,"args":{"name":"Ember (host)"}})json";
  for (const ThreadRecords& t : threads) {
    const std::string tid = std::to_string(t.tid);
    out += ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":" + tid + ",\"args\":{\"name\":";
    append_json_string(out, t.tid == s.starting_tid ? std::string("main") : "thread " + tid);
    out += "}}";
    for (const Record* e : t.records) {
      out += ",\n{\"ph\":\"X\",\"cat\":";
      out += e->is_op ? "\"op\"" : "\"trace\"";
      out += ",\"name\":";
      append_json_string(out, name_of(*e));
      out += ",\"pid\":1,\"tid\":" + tid + ",\"ts\":" + micros(e->start_ns - s.start_ns) +
             ",\"dur\":" + micros(e->end_ns - e->start_ns);
      if (e->is_op) {
        out += ",\"args\":{\"inputs\":";
        append_json_string(out, shapes_text(*e, 0, e->num_inputs, e->total_inputs));
        out += ",\"outputs\":";
        append_json_string(out, shapes_text(*e, e->num_inputs, e->num_outputs, e->total_outputs));
        out += ",\"dtype\":";
        append_json_string(out, dtype_name(e->dtype));
        out += ",\"device\":";
        append_json_string(out, device_of(*e).to_string());
        out += ",\"bytes_allocated\":" + std::to_string(e->value) + (e->nested ? ",\"nested\":true" : "") + "}";
      } else if (e->has_step) {
        out += ",\"args\":{\"step_num\":" + std::to_string(e->value) + "}";
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

std::string summary_table(const std::vector<ThreadRecords>& threads, const Session& s, int64_t stop_ns) {
  struct Row {
    int64_t ns = 0, calls = 0;
  };
  std::map<std::string_view, Row> rows;
  int64_t total_ns = 0, total_calls = 0;
  for (const ThreadRecords& t : threads)
    for (const Record* e : t.records) {
      if (!e->is_op || e->nested) continue;
      Row& r = rows[name_of(*e)];
      r.ns += e->end_ns - e->start_ns;
      ++r.calls;
      total_ns += e->end_ns - e->start_ns;
      ++total_calls;
    }
  std::vector<std::pair<std::string_view, Row>> sorted(rows.begin(), rows.end());
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
    std::snprintf(line, sizeof(line), "  %-40s %12.3f %10lld %7.1f%%\n", std::string(name).c_str(),
                  static_cast<double>(r.ns) / 1e6, static_cast<long long>(r.calls),
                  total_ns ? 100.0 * static_cast<double>(r.ns) / total_ns : 0.0);
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
#if defined(__x86_64__)
  if (g_use_tsc.load(std::memory_order_relaxed)) {
    const auto ticks = static_cast<int64_t>(__rdtsc() - g_tsc_base.load(std::memory_order_relaxed));
    return g_ns_base.load(std::memory_order_relaxed) +
           static_cast<int64_t>(static_cast<double>(ticks) * g_ns_per_tick.load(std::memory_order_relaxed));
  }
#endif
  return steady_ns();
}

void record_op(const char* name, std::span<const Tensor> inputs, std::span<const Tensor> outputs, int64_t start_ns,
               int64_t end_ns, int64_t bytes_allocated, bool nested, DeviceSpan span) {
  // The tensors whose shapes are kept, and the dimensions they need.
  const Shape* shapes[kMaxShapes];
  int8_t ranks[kMaxShapes];
  int kept = 0, num_inputs = 0;
  size_t num_dims = 0;
  const auto keep = [&](const Tensor& t) {
    const Shape* shape = t.defined() ? &t.shape() : nullptr;
    const int64_t rank = shape ? shape->rank() : 0;
    shapes[kept] = shape;
    ranks[kept] = static_cast<int8_t>(std::min<int64_t>(rank, 127));
    if (rank <= kMaxRank) num_dims += static_cast<size_t>(rank);
    ++kept;
  };
  for (const Tensor& t : inputs) {
    if (kept == kMaxShapes - (outputs.empty() ? 0 : 1)) break;  // a slot kept for the first output
    keep(t);
  }
  num_inputs = kept;
  for (const Tensor& t : outputs) {
    if (kept == kMaxShapes) break;
    keep(t);
  }
  ThreadBuffer* const b = this_thread_buffer();
  if (!b) return;
  Record* const r = &add_record(*b, sizeof(Record) + num_dims * sizeof(int64_t));
  r->name = name;
  r->start_ns = start_ns;
  r->end_ns = end_ns;
  r->value = bytes_allocated;
  r->span = span;
  r->is_op = true;
  r->nested = nested;
  r->num_inputs = static_cast<int8_t>(num_inputs);
  r->num_outputs = static_cast<int8_t>(kept - num_inputs);
  r->total_inputs = static_cast<int16_t>(std::min<size_t>(inputs.size(), 32767));
  r->total_outputs = static_cast<int16_t>(std::min<size_t>(outputs.size(), 32767));
  int64_t* dims = std::launder(reinterpret_cast<int64_t*>(reinterpret_cast<unsigned char*>(r) + sizeof(Record)));
  for (int i = 0; i < kept; ++i) {
    r->ranks[i] = ranks[i];
    if (shapes[i] && ranks[i] <= kMaxRank) dims = std::copy(shapes[i]->begin(), shapes[i]->end(), dims);
  }
  const Tensor* first = !outputs.empty() && outputs[0].defined() ? &outputs[0]
                        : !inputs.empty() && inputs[0].defined() ? &inputs[0]
                                                                 : nullptr;
  if (first) {
    r->dtype = first->dtype();
    r->device_type = first->device().type();
    r->device_index = first->device().index();
  }
  publish(*b, *r);
}

}  // namespace detail

bool active() noexcept { return detail::recording(); }

void start(const std::string& logdir, ProfilerOptions options) {
  EMBER_CHECK(!logdir.empty(), InvalidArgument) << "profiler.start: logdir is empty; give the folder to write into";
  const ThreadBuffer* self = this_thread_buffer();
  const int tid = self ? self->tid : 0;
  std::lock_guard<std::mutex> lock(g_mu);
  EMBER_CHECK(!session(), FailedPrecondition)
      << "profiler.start: the profiler is already running (into " << session()->logdir
      << "); stop it before starting another";
  std::vector<Block*> finished;
  drain(/*keep=*/false, finished);  // recorded after the last stop()
  give_blocks(finished);
  calibrate_clock();
  session() = Session{logdir, options, detail::now_ns(), tid};
  detail::g_active.store(true, std::memory_order_release);
}

std::string stop() {
  const int64_t stop_ns = detail::now_ns();
  std::lock_guard<std::mutex> lock(g_mu);
  EMBER_CHECK(session().has_value(), FailedPrecondition) << "profiler.stop: the profiler is not running";
  detail::g_active.store(false, std::memory_order_release);
  const Session s = std::move(*session());
  session().reset();
  // The records point into their blocks: those read past are reused once the trace is written.
  struct Finished {
    std::vector<Block*> blocks;
    ~Finished() { give_blocks(blocks); }
  } finished;
  const std::vector<ThreadRecords> threads = drain(/*keep=*/true, finished.blocks);
  std::vector<KernelEvent> kernels;
  try {
    kernels = resolve_spans(threads);
  } catch (...) {
    release_spans(threads);
    throw;
  }
  release_spans(threads);
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
  const int64_t end_ns = detail::now_ns();
  const size_t name_length = static_name_ ? 0 : std::min(name_.size(), kMaxNameLength);
  ThreadBuffer* const b = this_thread_buffer();
  if (!b) return;
  Record& r = add_record(*b, sizeof(Record) + (name_length + 7) / 8 * 8);
  r.name = static_name_;
  r.name_length = static_cast<uint32_t>(name_length);
  std::memcpy(reinterpret_cast<unsigned char*>(&r) + sizeof(Record), name_.data(), name_length);
  r.start_ns = start_ns_;
  r.end_ns = end_ns;
  r.has_step = step_num_.has_value();
  r.value = step_num_.value_or(0);
  publish(*b, r);
}

}  // namespace ember::profiler
