// The profiler: what a profile records (ops at the dispatch point, eager and replayed; Trace spans; the
// data pipeline's stages; fit's steps through TensorBoard's profile_batch; other threads'; long profiles whole),
// the file it writes (gzip'd Chrome trace-event JSON under plugins/profile/<run>/), the printed table, its clock,
// and misuse.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "framework/ember.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using json = nlohmann::json;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// Every *.trace.json.gz under dir/plugins/profile, sorted.
std::vector<fs::path> trace_files(const fs::path& dir) {
  std::vector<fs::path> out;
  const fs::path base = dir / "plugins" / "profile";
  if (!fs::exists(base)) return out;
  for (const auto& e : fs::recursive_directory_iterator(base))
    if (e.path().string().ends_with(".trace.json.gz")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

json read_trace(const fs::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string text;
  char buf[1 << 14];
  for (int n; (n = gzread(f, buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return json::parse(text);
}

std::vector<json> events_named(const json& trace, const std::string& name) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"])
    if (e.value("name", "") == name && e["ph"] == "X") out.push_back(e);
  return out;
}

bool inside(const json& inner, const json& outer) {
  return inner["tid"] == outer["tid"] && inner["ts"].get<double>() >= outer["ts"].get<double>() &&
         inner["ts"].get<double>() + inner["dur"].get<double>() <=
             outer["ts"].get<double>() + outer["dur"].get<double>() + 1e-3;
}

}  // namespace

TEST_CASE("profiler: ops and spans inside the window, with shapes, dtype and device", "[profiler]") {
  testing::TempDir dir("profiler");
  Tensor a = ops::ones({2, 3}), b = ops::ones({3, 4});
  ops::matmul(a, b);  // before start: not recorded
  std::string path;
  {
    profiler::start(dir.path().string(), {.print_summary = false});
    CHECK(profiler::active());
    {
      profiler::Trace step("train", 7);
      ops::matmul(a, b);
    }
    path = profiler::stop();
  }
  CHECK_FALSE(profiler::active());
  ops::matmul(a, b);  // after stop: not recorded
  REQUIRE(trace_files(dir.path()) == std::vector<fs::path>{fs::path(path)});
  CHECK(fs::path(path).parent_path().parent_path() == dir.path() / "plugins" / "profile");
  const json trace = read_trace(path);
  const std::vector<json> matmuls = events_named(trace, "matmul");
  REQUIRE(matmuls.size() == 1);
  const json& op = matmuls[0];
  CHECK(op["cat"] == "op");
  CHECK(op["args"]["inputs"] == "[2,3] [3,4]");
  CHECK(op["args"]["outputs"] == "[2,4]");
  CHECK(op["args"]["dtype"] == "float32");
  CHECK(op["args"]["device"] == Device::cpu().to_string());
  CHECK(op["args"]["bytes_allocated"] == 2 * 4 * 4);
  CHECK(op["dur"].get<double>() >= 0);
  const std::vector<json> steps = events_named(trace, "train");
  REQUIRE(steps.size() == 1);
  CHECK(steps[0]["args"]["step_num"] == 7);
  CHECK(inside(op, steps[0]));
  bool main_named = false;
  for (const json& e : trace["traceEvents"])
    main_named |= e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == op["tid"] && e["args"]["name"] == "main";
  CHECK(main_named);
}

TEST_CASE("profiler: a traced function's replayed ops are recorded", "[profiler][graph]") {
  testing::TempDir dir("profiler");
  auto f = ember::function([](const Tensor& x) { return ops::reduce_sum(ops::matmul(x, x)); });
  Tensor x = ops::ones({3, 3});
  f(x);  // the trace
  {
    profiler::Profile p(dir.path().string(), {.print_summary = false});
    f(x);
    f(x);
  }
  const std::vector<fs::path> files = trace_files(dir.path());
  REQUIRE(files.size() == 1);
  const json trace = read_trace(files[0]);
  CHECK(events_named(trace, "matmul").size() == 2);
  CHECK(events_named(trace, "reduce_sum").size() == 2);
}

TEST_CASE("profiler: the data pipeline's stages are on the timeline", "[profiler][data]") {
  testing::TempDir dir("profiler");
  data::Dataset ds = data::Dataset::range(8).map([](const data::Element& e) { return e; }).batch(4);
  profiler::start(dir.path().string(), {.print_summary = false});
  int64_t batches = 0;
  for (const data::Element& e : ds) batches += e.size() > 0;
  const json trace = read_trace(profiler::stop());
  CHECK(batches == 2);
  const std::vector<json> maps = events_named(trace, "Dataset.map");
  const std::vector<json> gets = events_named(trace, "Iterator::GetNext");
  CHECK(maps.size() == 8);
  CHECK(events_named(trace, "Dataset.batch").size() >= 2);
  REQUIRE(gets.size() >= 2);
  bool nested = false;
  for (const json& m : maps) nested |= inside(m, gets[0]);
  CHECK(nested);
}

TEST_CASE("profiler: the table names the ops that took the time", "[profiler]") {
  testing::TempDir dir("profiler");
  std::ostringstream captured;
  std::streambuf* saved = std::cout.rdbuf(captured.rdbuf());
  try {
    profiler::Profile p(dir.path().string());
    Tensor a = ops::ones({16, 16});
    for (int i = 0; i < 3; ++i) ops::matmul(a, a);
  } catch (...) {
    std::cout.rdbuf(saved);
    throw;
  }
  std::cout.rdbuf(saved);
  const std::string table = captured.str();
  CHECK_THAT(table, Contains("Profile: "));
  CHECK_THAT(table, Contains("time (ms)"));
  std::istringstream lines(table);
  bool matmul_row = false;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream row(line);
    std::string name;
    double ms = -1;
    long long calls = -1;
    if (row >> name >> ms >> calls && name == "matmul") matmul_row = calls == 3 && ms >= 0;
  }
  CHECK(matmul_row);
}

namespace {

// A device clock the test moves by hand: a mark holds the clock's value when it was made.
struct ProfilerFakeTimer final : profiler::detail::DeviceTimer {
  int64_t clock = 0;
  int live = 0;
  void* mark(int) override {
    ++live;
    return new int64_t(clock);
  }
  int64_t elapsed_ns(int, void* from, void* to) override {
    return *static_cast<int64_t*>(to) - *static_cast<int64_t*>(from);
  }
  void release(int, void* mark) noexcept override {
    --live;
    delete static_cast<int64_t*>(mark);
  }
  profiler::detail::DeviceSpan span(int device, int64_t begin, int64_t end) {
    clock = begin;
    void* b = mark(device);
    clock = end;
    return {device, b, mark(device)};
  }
};

}  // namespace

TEST_CASE("profiler: kernel times from the device timer go on the device's own track", "[profiler]") {
  testing::TempDir dir("profiler");
  ProfilerFakeTimer timer;
  profiler::detail::set_device_timer(&timer);
  profiler::start(dir.path().string(), {.print_summary = false});
  const int64_t t0 = profiler::detail::now_ns();
  // Two ops on device 1, enqueued 50 ns apart; their kernels ran 5 us and 2 us, 19 us apart on the device.
  profiler::detail::record_op("fake_kernel_a", {}, {}, t0, t0 + 100, 0, false, timer.span(1, 1000, 6000));
  profiler::detail::record_op("fake_kernel_b", {}, {}, t0 + 50, t0 + 150, 0, false, timer.span(1, 20000, 22000));
  profiler::detail::record_op("host_only", {}, {}, t0 + 60, t0 + 70, 0, false);
  const std::string path = profiler::stop();
  CHECK(timer.live == 0);  // every mark freed
  const json trace = read_trace(path);
  const std::vector<json> host_a = events_named(trace, "fake_kernel_a");
  std::vector<json> kernels;
  for (const json& e : trace["traceEvents"])
    if (e.value("cat", "") == "kernel") kernels.push_back(e);
  REQUIRE(host_a.size() == 2);  // the host's launch and the device's kernels
  REQUIRE(kernels.size() == 2);
  CHECK(kernels[0]["name"] == "fake_kernel_a");
  CHECK(kernels[1]["name"] == "fake_kernel_b");
  CHECK(kernels[0]["pid"] == 101);
  // The device's first op is taken to start as it was enqueued; the rest follow by device time.
  const json& launch_a = host_a[0]["cat"] == "op" ? host_a[0] : host_a[1];
  CHECK(kernels[0]["args"]["host_tid"] == launch_a["tid"]);
  CHECK(kernels[0]["ts"].get<double>() == Approx(launch_a["ts"].get<double>()).margin(1e-3));
  CHECK(kernels[0]["dur"].get<double>() == Approx(5.0).margin(1e-3));
  CHECK(kernels[1]["ts"].get<double>() - kernels[0]["ts"].get<double>() == Approx(19.0).margin(2e-3));
  CHECK(kernels[1]["dur"].get<double>() == Approx(2.0).margin(1e-3));
  bool named = false;
  for (const json& e : trace["traceEvents"])
    named = named || (e["ph"] == "M" && e["pid"] == 101 && e["name"] == "process_name");
  CHECK(named);

  // Marks recorded after stop() (an op already running when it came) are freed by the next start().
  profiler::detail::record_op("late", {}, {}, t0, t0 + 1, 0, false, timer.span(1, 0, 1));
  CHECK(timer.live == 2);
  profiler::start(dir.path().string(), {.print_summary = false});
  CHECK(timer.live == 0);
  profiler::stop();
  profiler::detail::set_device_timer(nullptr);
}

TEST_CASE("profiler: a GPU op's kernel time is on the GPU's track", "[profiler][cuda]") {
  if (device_count(DeviceType::CUDA) == 0) {
    WARN("no CUDA device (device_count(DeviceType::CUDA) == 0): skipped");
    return;
  }
  testing::TempDir dir("profiler");
  DeviceScope on(Device::cuda(0));
  const Tensor a = ops::ones({512, 512});
  (void)ops::matmul(a, a).to(Device::cpu());  // cuBLASLt loaded, the plan made
  profiler::start(dir.path().string(), {.print_summary = false});
  const Tensor c = ops::matmul(a, a);
  (void)c.to(Device::cpu());
  const json trace = read_trace(profiler::stop());
  int kernels = 0;
  for (const json& e : trace["traceEvents"])
    if (e.value("cat", "") == "kernel" && e["name"] == "matmul") {
      ++kernels;
      CHECK(e["pid"] == 100);
      CHECK(e["dur"].get<double>() > 0);
    }
  CHECK(kernels == 1);
}

TEST_CASE("profiler: misuse is a clear error", "[profiler]") {
  testing::TempDir dir("profiler");
  CHECK_THROWS_AS(profiler::stop(), FailedPrecondition);
  CHECK_THROWS_AS(profiler::start(""), InvalidArgument);
  profiler::start(dir.path().string(), {.print_summary = false});
  CHECK_THROWS_WITH(profiler::start(dir.path().string()), Contains("already running"));
  profiler::stop();
  CHECK_FALSE(profiler::active());
}

TEST_CASE("TensorBoard: profile_batch profiles exactly those training steps into train/", "[profiler][callbacks]") {
  testing::TempDir dir("profiler");
  random::set_seed(3);
  Sequential model({layers::Input({4}), layers::Dense(3, {.activation = "relu"}), layers::Dense(1)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  Tensor x = random::normal({40, 4}, {.seed = 1}), y = random::normal({40, 1}, {.seed = 2});
  callbacks::TensorBoard tb(dir.path().string(), {.write_graph = false, .profile_batch = {2, 3}});
  std::ostringstream captured;
  std::streambuf* saved = std::cout.rdbuf(captured.rdbuf());
  try {
    model.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .callbacks = {std::move(tb)}});
  } catch (...) {
    std::cout.rdbuf(saved);
    throw;
  }
  std::cout.rdbuf(saved);
  const std::vector<fs::path> files = trace_files(dir.path() / "train");
  REQUIRE(files.size() == 1);
  const json trace = read_trace(files[0]);
  std::vector<int64_t> steps;
  for (const json& e : events_named(trace, "train")) steps.push_back(e["args"]["step_num"]);
  CHECK(steps == std::vector<int64_t>{1, 2});  // global batches 2 and 3 are the first epoch's steps 1 and 2
  CHECK_FALSE(events_named(trace, "matmul").empty());
  CHECK_FALSE(profiler::active());
  CHECK_THAT(captured.str(), Contains("Profile: "));

  CHECK_THROWS_AS(callbacks::TensorBoard("logs", {.profile_batch = -1}), InvalidArgument);
  CHECK_THROWS_WITH(callbacks::TensorBoard("logs", {.profile_batch = {5, 2}}), Contains("profile_batch"));
}

TEST_CASE("profiler: a long profile keeps every record in order, with its shapes and names", "[profiler]") {
  testing::TempDir dir("profiler");
  const Tensor v = ops::zeros({3}), m = ops::zeros({2, 5}), r7 = ops::zeros({1, 1, 1, 1, 1, 1, 2});
  const std::vector<Tensor> six = {ops::zeros({1}), ops::zeros({2}), ops::zeros({3}),
                                   ops::zeros({4}), ops::zeros({5}), ops::zeros({6})};
  const std::string long_name(5000, 'x');
  constexpr int kOps = 4000;  // some hundreds of KiB of records: many of a thread's blocks
  profiler::start(dir.path().string(), {.print_summary = false});
  const int64_t t0 = profiler::detail::now_ns();
  for (int i = 0; i < kOps; ++i) {
    const Tensor ins[] = {m, v};
    profiler::detail::record_op("fake_op", ins, std::span<const Tensor>(&m, 1), t0 + i, t0 + i + 1, i, i % 2 == 1);
  }
  profiler::detail::record_op("six_in", six, std::span<const Tensor>(&v, 1), t0, t0 + 1, 0, false);
  const Tensor odd[] = {r7, Tensor()};
  profiler::detail::record_op("odd_shapes", odd, {}, t0, t0 + 1, 0, false);
  { profiler::Trace quoted(std::string("a \"quoted\"\\name"), 3); }
  { profiler::Trace longest(long_name); }
  const json trace = read_trace(profiler::stop());

  const std::vector<json> fakes = events_named(trace, "fake_op");
  REQUIRE(fakes.size() == kOps);
  for (int i = 0; i < kOps; ++i) {
    INFO("record " << i);
    CHECK(fakes[i]["args"]["bytes_allocated"] == i);
    CHECK(fakes[i]["args"]["inputs"] == "[2,5] [3]");
    CHECK(fakes[i]["args"]["outputs"] == "[2,5]");
    CHECK(fakes[i]["args"].contains("nested") == (i % 2 == 1));
    if (fakes[i]["args"]["bytes_allocated"] != i || fakes[i]["args"]["inputs"] != "[2,5] [3]") break;
  }
  // Four inputs shown (a slot is the first output's), the rest as "...": TF's shape summaries stop too.
  const std::vector<json> six_in = events_named(trace, "six_in");
  REQUIRE(six_in.size() == 1);
  CHECK(six_in[0]["args"]["inputs"] == "[1] [2] [3] [4] ...");
  CHECK(six_in[0]["args"]["outputs"] == "[3]");
  const std::vector<json> odd_shapes = events_named(trace, "odd_shapes");
  REQUIRE(odd_shapes.size() == 1);
  CHECK(odd_shapes[0]["args"]["inputs"] == "rank 7 []");  // past rank 6 a shape is its rank; undefined: []
  CHECK(odd_shapes[0]["args"]["outputs"] == "");
  const std::vector<json> quoted = events_named(trace, "a \"quoted\"\\name");
  REQUIRE(quoted.size() == 1);
  CHECK(quoted[0]["args"]["step_num"] == 3);
  CHECK(events_named(trace, long_name.substr(0, 4096)).size() == 1);  // a name is cut at 4096 characters
}

TEST_CASE("profiler: a thread's records are written after it ends, on a track of its own", "[profiler]") {
  testing::TempDir dir("profiler");
  const Tensor a = ops::ones({2, 2});
  profiler::start(dir.path().string(), {.print_summary = false});
  std::thread worker([&a] {
    profiler::Trace span("worker span");
    ops::matmul(a, a);
  });
  worker.join();
  ops::add(a, a);
  const json first = read_trace(profiler::stop());
  const std::vector<json> spans = events_named(first, "worker span");
  const std::vector<json> adds = events_named(first, "add");
  REQUIRE(spans.size() == 1);
  REQUIRE(adds.size() == 1);
  CHECK(spans[0]["tid"] != adds[0]["tid"]);
  const std::vector<json> matmuls = events_named(first, "matmul");
  REQUIRE(matmuls.size() == 1);
  CHECK(inside(matmuls[0], spans[0]));

  // The next profile has the main thread's records only.
  profiler::start(dir.path().string(), {.print_summary = false});
  ops::add(a, a);
  const json second = read_trace(profiler::stop());
  CHECK(events_named(second, "worker span").empty());
  CHECK(events_named(second, "add").size() == 1);
}

TEST_CASE("profiler: spans last as long as the steady clock says", "[profiler]") {
  // The profiler's clock may be the CPU's counter scaled to nanoseconds: a span around a sleep lasts at least the
  // sleep (and not wildly longer: the scale is right).
  testing::TempDir dir("profiler");
  profiler::start(dir.path().string(), {.print_summary = false});
  const auto t0 = std::chrono::steady_clock::now();
  {
    profiler::Trace span("sleep");
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
  const double steady_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  const json trace = read_trace(profiler::stop());
  const std::vector<json> spans = events_named(trace, "sleep");
  REQUIRE(spans.size() == 1);
  CHECK(spans[0]["dur"].get<double>() >= 29000);
  CHECK(spans[0]["dur"].get<double>() <= steady_us * 1.01 + 1);
  CHECK(spans[0]["ts"].get<double>() >= 0);
}
