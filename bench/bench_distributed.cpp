// Multi-worker communication and scaling, run as two workers: mpirun -np 2 build/bench/bench_distributed [--json]
// (Open MPI as root also needs --allow-run-as-root). Rows, printed by the chief:
// - allreduce_<N>MB: a sum all-reduce of N MB of float32 through Ember's communicator (a non-blocking
//   MPI_Iallreduce polled against its deadline, into a second buffer) beside a plain blocking MPI_Allreduce of the
//   same buffers, into the second or in place, whichever was faster, interleaved in one run (each side as many
//   times, each first in turn); the figure is the algorithm bandwidth, bytes / seconds, best of the repeats
//   (allreduce_<N>MB_median: their median, which depends less on one lucky call on a loaded machine).
//   speedup = Ember / MPI (the aim: at least 0.95).
// - reduce_<N>MB: Strategy::reduce, what fit's gradient all-reduce runs: the same, plus packing the tensor into a
//   buffer and the result out of it.
// - mlp_epoch: one epoch of a 784-256-256-10 MLP on 8,192 synthetic samples at a global batch of 128, as two
//   workers (each 64 rows a step) beside the chief alone at 128 rows a step; speedup = one worker's time / two
//   workers' time (2.0 would be perfect scaling).
// - mlp_epoch_overlap, cnn_epoch_overlap: the same epoch as two workers (the CNN: 32x32x3 images, two 3x3
//   convolutions of 32 and 64 filters, pooled, then Dense 128 and 10), the gradients all-reduced during the
//   backward pass (the default) beside after it (overlap_gradients = false), interleaved; speedup = after / during.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "framework/distribute/communicator.h"
#include "framework/ember.h"

using namespace ember;
using namespace ember::bench;

namespace {

std::shared_ptr<Sequential> compiled(std::vector<SequentialEntry> entries) {
  auto m = std::make_shared<Sequential>(std::move(entries));
  m->compile({.optimizer = optimizers::Adam(), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
              .metrics = {"accuracy"}});
  return m;
}

std::shared_ptr<Sequential> mlp() {
  backend::clear_session();
  random::set_seed(1);
  return compiled({layers::Input({784}), layers::Dense(256, {.activation = "relu"}),
                   layers::Dense(256, {.activation = "relu"}), layers::Dense(10)});
}

std::shared_ptr<Sequential> cnn() {
  backend::clear_session();
  random::set_seed(1);
  return compiled({layers::Input({32, 32, 3}), layers::Conv2D(32, 3, {.activation = "relu"}), layers::MaxPooling2D(2),
                   layers::Conv2D(64, 3, {.activation = "relu"}), layers::MaxPooling2D(2), layers::Flatten(),
                   layers::Dense(128, {.activation = "relu"}), layers::Dense(10)});
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The seconds of one epoch of fit as two workers under `strategy` (after a warm-up epoch), best of `reps`.
double two_worker_epoch(const distribute::Strategy& strategy, std::shared_ptr<Sequential> (*make)(), const Tensor& x,
                        const Tensor& y, const FitOptions& options, int reps) {
  std::shared_ptr<Sequential> m;
  {
    auto scope = strategy.scope();
    m = make();
  }
  m->fit(x, y, options);
  strategy.reduce(distribute::ReduceOp::SUM, Tensor::scalar<float>(0));
  return best_seconds(reps, [&] { m->fit(x, y, options); });
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = json_requested(argc, argv);
  const distribute::MultiWorkerMirroredStrategy strategy;
  auto& comm = distribute::detail::Communicator::world();
  const bool chief = comm.rank() == 0;
  if (comm.size() < 2) {
    std::printf("bench_distributed: run it as two workers: mpirun -np 2 %s\n", argv[0]);
    return 0;
  }
  // Waits for every worker without spinning on a core the others need (Ember's collectives back off).
  auto barrier = [&] { strategy.reduce(distribute::ReduceOp::SUM, Tensor::scalar<float>(0)); };

  for (const int mb : {1, 16, 256}) {
    const size_t n = static_cast<size_t>(mb) * (1 << 20) / sizeof(float);
    std::vector<float> buffer(n, 1.0f), sums(n);
    Tensor t = Tensor::from_vector(buffer);
    // Each side timed as often as the other, in turns, each first in turn: on a loaded machine a call's time is
    // mostly the wait for the other worker to be scheduled, and the best of fewer tries is the worse.
    const int reps = mb >= 256 ? 4 : mb >= 16 ? 16 : 40;
    std::vector<double> ember_times, mpi_times;
    double reduce = 1e300;
    auto time_mpi = [&](bool in_place) {
      barrier();
      mpi_times.push_back(best_seconds(1, [&] {
        MPI_Allreduce(in_place ? MPI_IN_PLACE : buffer.data(), sums.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      }));
    };
    auto time_ember = [&] {
      barrier();
      ember_times.push_back(
          best_seconds(1, [&] { comm.all_reduce_sum(buffer.data(), sums.data(), n, DType::Float32, 600, "bench"); }));
      barrier();
      reduce = std::min(reduce, best_seconds(1, [&] { keep_alive(strategy.reduce(distribute::ReduceOp::SUM, t).raw_data()); }));
    };
    for (int r = 0; r < reps; ++r)
      for (const bool in_place : {false, true}) {
        if (r % 2 == 0) time_mpi(in_place);
        time_ember();
        if (r % 2 != 0) time_mpi(in_place);
      }
    const double bytes = static_cast<double>(n * sizeof(float));
    const double ember = *std::min_element(ember_times.begin(), ember_times.end());
    const double mpi = *std::min_element(mpi_times.begin(), mpi_times.end());
    if (chief) {
      const std::string size = std::to_string(mb) + "MB";
      print({"allreduce_" + size, "GB/s", "MPI_Allreduce", bytes / ember / 1e9, bytes / mpi / 1e9, mpi / ember}, json);
      const double ember_median = median(ember_times), mpi_median = median(mpi_times);
      print({"allreduce_" + size + "_median", "GB/s", "MPI_Allreduce", bytes / ember_median / 1e9,
             bytes / mpi_median / 1e9, mpi_median / ember_median},
            json);
      print({"reduce_" + size, "GB/s", "MPI_Allreduce", bytes / reduce / 1e9, bytes / mpi / 1e9, mpi / reduce}, json);
    }
  }

  // One epoch: the chief alone at the global batch (the other worker waits), then both at half of it each.
  random::set_seed(2);
  Tensor x = random::normal({8192, 784});
  Tensor y = ops::cast(random::uniform({8192}, {.minval = 0, .maxval = 10}), DType::Int64);
  const FitOptions options{.batch_size = 128, .epochs = 1, .verbose = 0, .shuffle = false};
  double one = 0;
  if (chief) {
    auto m = mlp();
    m->fit(x, y, options);  // warm-up: traces the step
    one = best_seconds(2, [&] { m->fit(x, y, options); });
  }
  barrier();
  const double two = two_worker_epoch(strategy, mlp, x, y, options, 2);
  if (chief) print({"mlp_epoch", "s", "1 worker", two, one, one / two}, json);

  // Overlapped or not, interleaved so that the machine's load falls on both alike.
  const distribute::MultiWorkerMirroredStrategy after({.overlap_gradients = false});
  random::set_seed(3);
  Tensor images = random::normal({2048, 32, 32, 3});
  Tensor labels = ops::cast(random::uniform({2048}, {.minval = 0, .maxval = 10}), DType::Int64);
  struct Row {
    const char* name;
    std::shared_ptr<Sequential> (*make)();
    Tensor x, y;
  };
  for (const Row& row : {Row{"mlp_epoch_overlap", mlp, x, y}, Row{"cnn_epoch_overlap", cnn, images, labels}}) {
    double during = 1e300, later = 1e300;
    for (int r = 0; r < 4; ++r)
      for (const bool overlap : {r % 2 == 0, r % 2 != 0}) {  // each first in turn
        double& best = overlap ? during : later;
        best = std::min(best, two_worker_epoch(overlap ? strategy : after, row.make, row.x, row.y, options, 1));
      }
    if (chief) print({row.name, "s", "after backward", during, later, later / during}, json);
  }
  return 0;
}
