// Training speed and memory on real Fashion-MNIST through the public Keras-style API, 2 intra-op
// threads: the MLP (784-256-256-10, Adam 1e-3, SparseCategoricalCrossentropy from logits, "accuracy")
// and the Keras example CNN at batch 128 through fit(dataset) (also under the mixed_bfloat16 policy, against
// PyTorch's torch.autocast bfloat16), the MLP at batch 1 and 8 (latency-bound)
// through fit and through train_on_batch, the MLP's eager forward at batch 1, and the peak resident
// memory (VmHWM) of a process that trains one full MLP epoch; and the MLP epoch on a shared machine, beside
// one and two busy processes (another user's compile, say) that the program starts and stops itself.
// This program prints Ember's figures only; bench/compare_pytorch.py runs it, measures the same rows in
// PyTorch and prints both with the speedup (what `make bench` shows; the loaded group is Ember's only).
// Usage: bench_train [--json] [--only mlp128|cnn128|cnn128_bf16|latency|forward|rss|loaded]
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "apps/fashion_mnist.h"
#include "framework/ember.h"

using namespace ember;
using namespace ember::bench;

namespace {

constexpr int64_t kTrainImages = 60000;
constexpr int64_t kEpochSteps128 = (kTrainImages + 127) / 128;  // 469, Keras's steps per epoch
constexpr int64_t kCnnSteps = 60;       // the CNN's epoch is projected from this many timed steps
constexpr int64_t kLatencySteps = 2000;  // batch 1 and 8 rows time this many steps, not an epoch
constexpr int64_t kForwardCalls = 2000;
const char* const kGroups[] = {"mlp128", "cnn128", "cnn128_bf16", "latency", "forward", "rss", "loaded"};

// Ember's figure for one row; compare_pytorch.py pairs it with PyTorch's by name.
struct Figure {
  std::string name, unit;
  double value;
  bool higher_is_better;
};

void print_figure(const Figure& f, bool json) {
  if (json)
    std::printf("{\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\", \"higher_is_better\": %s}\n", f.name.c_str(),
                f.value, f.unit.c_str(), f.higher_is_better ? "true" : "false");
  else
    std::printf("%-24s ember %12.3f %s\n", f.name.c_str(), f.value, f.unit.c_str());
  std::fflush(stdout);
}

std::unique_ptr<Sequential> make_mlp() { return fashion_mnist::make_model("mlp"); }
std::unique_ptr<Sequential> make_cnn() { return fashion_mnist::make_model("cnn"); }

void compile(Model& model) {
  model.compile({.optimizer = optimizers::Adam(),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
}

// The app's pipeline (shuffle seed 42).
data::Dataset pipeline(const datasets::Split& split, const Shape& image_shape, int64_t batch_size, bool shuffle) {
  return fashion_mnist::pipeline(split, image_shape, batch_size, shuffle, 42);
}

double seconds_of(const auto& fn) {
  const auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Seconds of one fit epoch of `steps` steps (all of the dataset when 0): the best of `reps`, after a
// short warm-up fit that builds the optimizer's slots and the kernels' caches.
double fit_seconds(Model& model, const data::Dataset& ds, int64_t steps, int reps) {
  model.fit(ds, {.epochs = 1, .verbose = 0, .steps_per_epoch = 5});
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    FitOptions options{.epochs = 1, .verbose = 0};
    if (steps > 0) options.steps_per_epoch = steps;
    best = std::min(best, seconds_of([&] { model.fit(ds, options); }));
  }
  return best;
}

void mlp128_rows(const datasets::Split& train, bool json) {
  auto model = make_mlp();
  compile(*model);
  const double s = fit_seconds(*model, pipeline(train, Shape{784}, 128, true), 0, 3);
  print_figure({"mlp_b128_epoch", "s/epoch", s, false}, json);
  print_figure({"mlp_b128", "steps/s", static_cast<double>(kEpochSteps128) / s, true}, json);
}

// Processes that keep a core busy each (a spinning loop) from construction to destruction, which kills and
// reaps them whatever ends the measurement; each also dies with this process (PR_SET_PDEATHSIG), so even a
// crash leaves none spinning.
class BusyProcesses {
 public:
  explicit BusyProcesses(int n) {
    std::fflush(stdout);
    for (int i = 0; i < n; ++i) {
      const pid_t parent = getpid();
      const pid_t pid = fork();
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(0);  // the parent died before prctl
        for (;;) asm volatile("");
      }
      if (pid < 0) throw std::runtime_error("fork failed for a busy process");
      pids_.push_back(pid);
    }
  }
  ~BusyProcesses() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }
  BusyProcesses(const BusyProcesses&) = delete;
  BusyProcesses& operator=(const BusyProcesses&) = delete;

 private:
  std::vector<pid_t> pids_;
};

// Median seconds of `reps` fit epochs (after a short warm-up fit): on a loaded machine the best epoch is
// luck, so this group takes the median for the idle epoch too.
double median_fit_seconds(Model& model, const data::Dataset& ds, int reps) {
  model.fit(ds, {.epochs = 1, .verbose = 0, .steps_per_epoch = 5});
  std::vector<double> s;
  for (int r = 0; r < reps; ++r) s.push_back(seconds_of([&] { model.fit(ds, {.epochs = 1, .verbose = 0}); }));
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

// The MLP epoch of mlp128_rows idle, then beside one and then two busy processes (one per core of a 2-core
// machine), each with its ratio to the idle epoch: a fair share of the CPU gives 1.5x with one (three
// runnable threads on two cores) and 2x with two. The same model carries on from row to row, as a training
// run does when the load changes under it.
void loaded_rows(const datasets::Split& train, bool json) {
  auto model = make_mlp();
  compile(*model);
  const data::Dataset ds = pipeline(train, Shape{784}, 128, true);
  const double idle = median_fit_seconds(*model, ds, 3);
  print_figure({"mlp_b128_epoch_idle", "s/epoch", idle, false}, json);
  for (int busy : {1, 2}) {
    double s;
    {
      BusyProcesses others(busy);
      s = median_fit_seconds(*model, ds, 3);
    }
    const std::string b = std::to_string(busy);
    print_figure({"mlp_b128_epoch_busy" + b, "s/epoch", s, false}, json);
    print_figure({"mlp_b128_busy" + b + "_over_idle", "x", s / idle, false}, json);
  }
}

// The CNN's steps per second at batch 128 under the global policy `policy` (the logits stay float32).
double cnn128_steps_per_s(const datasets::Split& train, const std::string& policy) {
  mixed_precision::set_global_policy(policy);
  auto model = make_cnn();
  mixed_precision::set_global_policy("float32");
  compile(*model);
  const double s = fit_seconds(*model, pipeline(train, Shape{28, 28, 1}, 128, true), kCnnSteps, 2);
  return static_cast<double>(kCnnSteps) / s;
}

void cnn128_rows(const datasets::Split& train, bool json) {
  const double steps_per_s = cnn128_steps_per_s(train, "float32");
  print_figure({"cnn_b128", "steps/s", steps_per_s, true}, json);
  // A full CNN epoch would take most of the bench's time on 2 cores; the steps' rate projects it.
  print_figure({"cnn_b128_epoch_est", "s/epoch", static_cast<double>(kEpochSteps128) / steps_per_s, false}, json);
}

void cnn128_bf16_rows(const datasets::Split& train, bool json) {
  print_figure({"cnn_b128_mixed_bfloat16", "steps/s", cnn128_steps_per_s(train, "mixed_bfloat16"), true}, json);
}

// The MLP at batch 1 and 8: fit on the (unshuffled) pipeline, and a train_on_batch loop over batches
// prepared beforehand, each timing kLatencySteps steps.
void latency_rows(const datasets::Split& train, bool json) {
  for (int64_t batch : {1, 8}) {
    const std::string b = std::to_string(batch);
    auto model = make_mlp();
    compile(*model);
    const data::Dataset ds = pipeline(train, Shape{784}, batch, false);
    const double fit_s = fit_seconds(*model, ds, kLatencySteps, 2);
    print_figure({"mlp_b" + b + "_fit", "steps/s", static_cast<double>(kLatencySteps) / fit_s, true}, json);

    std::vector<data::Element> batches;
    for (const data::Element& e : ds.take(256)) batches.push_back(e);
    for (int i = 0; i < 20; ++i) model->train_on_batch(batches[i][0], batches[i][1]);
    double best = 1e300;
    for (int r = 0; r < 2; ++r)
      best = std::min(best, seconds_of([&] {
                        for (int64_t i = 0; i < kLatencySteps; ++i) {
                          const data::Element& e = batches[static_cast<size_t>(i) % batches.size()];
                          model->train_on_batch(e[0], e[1]);
                        }
                      }));
    print_figure({"mlp_b" + b + "_train_on_batch", "steps/s", static_cast<double>(kLatencySteps) / best, true}, json);
  }
}

// The MLP's eager forward pass (training = false) on one image.
void forward_rows(const datasets::Split& train, bool json) {
  auto model = make_mlp();
  const Tensor x = (*pipeline(train, Shape{784}, 1, false).take(1).begin())[0];
  for (int i = 0; i < 100; ++i) keep_alive((*model)(x).raw_data());
  const double s = best_seconds(5, [&] {
    for (int64_t i = 0; i < kForwardCalls; ++i) keep_alive((*model)(x).raw_data());
  });
  print_figure({"mlp_b1_forward", "us/call", s / static_cast<double>(kForwardCalls) * 1e6, false}, json);
}

// Peak resident set of this process so far (VmHWM), in MiB; 0 where /proc does not report it.
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // "VmHWM:  123 kB"
  return 0;
}

// One full MLP epoch at batch 128 from loading the data on: meant to run alone in its process.
void rss_rows(const datasets::Split& train, bool json) {
  auto model = make_mlp();
  compile(*model);
  model->fit(pipeline(train, Shape{784}, 128, true), {.epochs = 1, .verbose = 0});
  print_figure({"mlp_epoch_peak_rss", "MiB", peak_rss_mib(), false}, json);
}

// Runs `bench_train --only rss` in a fresh process, so that nothing measured before inflates its peak;
// it prints its row to the same stdout.
void spawn_rss_row(bool json) {
  std::vector<char> self(4096);
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) {
    std::fprintf(stderr, "bench_train: cannot find its own executable for the rss row\n");
    return;
  }
  self[static_cast<size_t>(n)] = '\0';
  std::vector<const char*> args = {self.data(), "--only", "rss"};
  if (json) args.insert(args.begin() + 1, "--json");
  args.push_back(nullptr);
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    execv(self.data(), const_cast<char* const*>(args.data()));
    std::perror("bench_train: execv");
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    std::fprintf(stderr, "bench_train: the rss process failed\n");
}

int usage(const char* problem) {
  std::fprintf(stderr,
               "bench_train: %s\nusage: bench_train [--json] [--only mlp128|cnn128|cnn128_bf16|latency|forward|rss|loaded]\n",
               problem);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
      bool known = false;
      for (const char* g : kGroups) known = known || only == g;
      if (!known) return usage(("--only got '" + only + "', expected one of the groups below").c_str());
    } else {
      return usage((std::string("unknown argument '") + argv[i] + "'").c_str());
    }
  }
  if (only.empty()) spawn_rss_row(json);  // first, while the machine is otherwise quiet

  try {
    config::set_intra_op_parallelism_threads(2);
    random::set_seed(42);
    const datasets::Split train = datasets::fashion_mnist::load_data().train;
    if (only == "rss") {
      rss_rows(train, json);
      return 0;
    }
    if (!json)
      std::printf("Fashion-MNIST, %d intra-op threads; Ember's figures only (bench/compare_pytorch.py adds "
                  "PyTorch's)\n", config::get_intra_op_parallelism_threads());
    if (only.empty() || only == "mlp128") mlp128_rows(train, json);
    if (only.empty() || only == "cnn128") cnn128_rows(train, json);
    if (only.empty() || only == "cnn128_bf16") cnn128_bf16_rows(train, json);
    if (only.empty() || only == "latency") latency_rows(train, json);
    if (only.empty() || only == "forward") forward_rows(train, json);
    if (only.empty() || only == "loaded") loaded_rows(train, json);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train: %s\n", e.what());
    return 1;
  }
  return 0;
}
