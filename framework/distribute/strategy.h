#pragma once
// Data-parallel training over several workers (TF: tf.distribute). A MultiWorkerMirroredStrategy is one replica
// per process; `mpirun -np N ./app` starts N of them, and a process started alone is a job of one. Variables
// created in its scope (a model's weights, its optimizer's slots, when fit builds them) are mirrored: the chief's
// values are broadcast at their first use, so every worker starts identical. fit splits each global batch across
// the replicas, scales each replica's loss by 1/num_replicas_in_sync and sums the gradients over the replicas (so
// the optimizer applies their mean, as TF's fit does), and averages the metrics so that every worker logs the same
// numbers.
//
//   distribute::MultiWorkerMirroredStrategy strategy;
//   Sequential model;
//   {
//     auto scope = strategy.scope();
//     model = build_model();
//     model.compile({...});
//   }
//   model.fit(ds, {.epochs = 5});   // ds batched by the global batch size
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/autodiff/variable.h"
#include "framework/core/device.h"
#include "framework/core/error.h"
#include "framework/core/tensor.h"

namespace ember::distribute {

// How values from the replicas combine (TF: tf.distribute.ReduceOp).
enum class ReduceOp { SUM, MEAN };

// The transport of the collectives (TF: tf.distribute.experimental.CommunicationImplementation): RING is MPI's
// all-reduce between processes, through host memory; NCCL all-reduces on the GPU, one GPU per worker (CUDA
// builds only); AUTO picks RING.
enum class CommunicationImplementation { AUTO, RING, NCCL };

struct MultiWorkerMirroredStrategyOptions {
  CommunicationImplementation communication = CommunicationImplementation::AUTO;
  // A collective that has not completed after this long ends with DeadlineExceeded (a worker died or hangs).
  // Unset: the environment variable EMBER_COLLECTIVE_TIMEOUT_SECONDS, else 600 s (TF: CommunicationOptions).
  std::optional<double> timeout_seconds{};
  // Gradients are all-reduced in packs of about this many bytes (TF: CommunicationOptions.bytes_per_pack);
  // 0: 32 MiB, and under overlap_gradients the first pack (the last layers' gradients) at most 1 MiB, so that
  // it starts early (PyTorch DDP's first bucket).
  int64_t bytes_per_pack = 0;
  // fit all-reduces each pack of gradients as soon as the backward pass has made them all, while it computes
  // the rest: packs of the last variables first, since the backward makes their gradients first (PyTorch DDP's
  // buckets). false: every pack after the backward pass (TF's order). The results are the same either way.
  bool overlap_gradients = true;
};

// Where this process stands in the job (TF: the strategy's cluster_resolver).
struct ClusterResolver {
  std::string task_type = "worker";
  int task_id = 0;      // this worker's index (MPI rank)
  int num_workers = 1;  // workers in the job (MPI size)
  // Worker 0 is the chief: it alone writes checkpoints.
  bool is_chief() const { return task_id == 0; }
};

class StrategyScope;

// One value per replica of this process, replica 0's first (TF: tf.distribute's PerReplica): what Strategy::run
// returns, and an argument of run that gives each replica its own value.
template <class T>
struct PerReplica {
  std::vector<T> values;
};
template <class T>
struct is_per_replica : std::false_type {};
template <class T>
struct is_per_replica<PerReplica<T>> : std::true_type {};

// A distribution strategy (TF: tf.distribute.Strategy): a handle; copies share one strategy.
class Strategy {
 public:
  // Replicas that take part in every step: the workers times the replicas in each worker's process.
  int num_replicas_in_sync() const;
  ClusterResolver cluster_resolver() const;
  // While the returned scope lives, variables created on this thread are this strategy's, and Model::compile
  // attaches the model to it. Scopes nest; the innermost one counts.
  [[nodiscard]] StrategyScope scope() const;
  // Runs fn(args...) once per replica of this process (TF: strategy.run): first the variables created in the
  // scope are mirrored, then fn runs inside the scope with get_replica_context() set to each replica in turn.
  // An argument that is a PerReplica gives each replica its own value; a data::Element (a batch of
  // experimental_distribute_dataset) gives each replica its part; any other argument is passed to every replica
  // as it is. Returns every replica's result (nothing when fn returns void). With one replica per process
  // (MultiWorkerMirroredStrategy) each worker passes its own inputs, and Optimizer::apply all-reduces the
  // gradients over the workers before applying them. With several (MirroredStrategy's devices), the
  // replicas run one after another on the model's own variables (they hold the same values), so their devices
  // must be one device named several times. Optimizer::apply inside run applies the SUM of the replicas'
  // gradients, as Keras's optimizer under TF does: each replica's loss must be its share of the global batch's
  // (compute_average_loss, or a Loss whose mean reduction divides by the replicas inside run). With several
  // replicas in this process it keeps each replica's gradients and applies their sum once, when the last replica
  // applies: until then the variables keep their values, as every replica must read them.
  template <class F, class... Args>
  auto run(F&& fn, Args&&... args) const;
  // `value` combined over the workers: the sum, or the mean (TF: strategy.reduce with axis None; MEAN sums
  // value / n, exact for a power-of-two number of workers). Every worker gets the same tensor. float32 or float64.
  // With several replicas in this process a tensor is taken as the same value on every replica (TF's
  // non-distributed value): MEAN gives it back (over the workers), SUM is an InvalidArgument, as in TF (a
  // PerReplica is what the replicas sum).
  Tensor reduce(ReduceOp op, const Tensor& value) const;
  // The replicas' values combined: summed replica by replica in their order (MEAN: each scaled by 1/n first),
  // then over the workers (TF: strategy.reduce of a PerReplica). One value per replica of this process.
  Tensor reduce(ReduceOp op, const PerReplica<Tensor>& value) const;
  // Each tensor combined over the replicas (undefined tensors stay undefined): over MPI packed into all-reduces
  // of about bytes_per_pack bytes, over NCCL one pack per dtype. Inside a traced function it runs as a host call
  // on every call.
  std::vector<Tensor> all_reduce(ReduceOp op, const std::vector<Tensor>& values) const;
  // This worker's part of every batch of `dataset` (TF: experimental_distribute_dataset): worker k of n takes
  // rows [k*b/n, (k+1)*b/n) of each batch of b rows, so that the n workers together see the global batch. Every
  // worker must read the same batches in the same order (seed its shuffles); a batch whose size n does not
  // divide is an InvalidArgument.
  // With several replicas in this process each batch holds their parts one after another (replica_batches),
  // which run hands out one per replica.
  data::Dataset experimental_distribute_dataset(const data::Dataset& dataset) const;

  // --- used by fit (framework/model) ---
  // This worker's rows of a global batch (see experimental_distribute_dataset); `who` names the caller.
  data::Element local_batch(const data::Element& global_batch, const std::string& who) const;
  // The replicas in this process (MirroredStrategy's devices; 1 for a worker of MultiWorkerMirroredStrategy).
  int num_replicas_in_process() const;
  // The devices of the replicas in this process, replica 0's first (MirroredStrategy's; empty for
  // MultiWorkerMirroredStrategy, whose one replica runs where the process puts its ops).
  const std::vector<Device>& devices() const;
  // fit's batches with several replicas in this process: this worker's rows of a global batch cut into one part
  // per replica (replica r takes rows [r*b/n, (r+1)*b/n) of the worker's b rows), the parts one after another in
  // one element (k tensors each: n*k tensors). A batch that the replicas cannot share evenly is an
  // InvalidArgument naming the fix.
  data::Element replica_batches(const data::Element& global_batch, const std::string& who) const;
  // An element of replica_batches cut back into its parts, one per replica of this process.
  std::vector<data::Element> replica_parts(const data::Element& batch, const std::string& who) const;
  // The mean (or sum) of the replicas' gradients of this process, replica by replica in their order (so the
  // result does not depend on timing), on replica 0's device, then over the workers: what is applied. grads[r]
  // holds replica r's gradients, one per variable (undefined where unconnected on every replica).
  std::vector<Tensor> combine_replica_gradients(ReduceOp op, const std::vector<std::vector<Tensor>>& grads) const;
  // Broadcasts the chief's values of the variables created in the scope and not mirrored yet, then of `also`
  // (those not among them). InvalidArgument on every worker, naming the first difference, when the workers'
  // variables differ (count, shape or dtype).
  void mirror_variables(const std::string& who, const std::vector<Variable>& also = {}) const;
  // Sets every worker's global random generator to the chief's (drawing the chief a seed when it has none), so
  // that shuffles and dropout agree across the workers.
  void sync_random_state(const std::string& who) const;
  // tape.gradient(target, variables) combined over the replicas (`op`); under overlap_gradients each pack's
  // all-reduce starts during the backward pass, as soon as the pack's gradients are made. An unconnected
  // variable's gradient stays undefined. Traced, the all-reduces are host calls placed among the backward's ops.
  std::vector<Tensor> reduced_gradients(ReduceOp op, GradientTape& tape, const Tensor& target,
                                        const std::vector<Variable>& variables) const;
  // fit's and evaluate's run of train_step and test_step (TF: strategy.run(train_step)): fn(part) for each
  // replica's part of `batch` (an element of replica_batches) in the replica's context, as run does, but on any
  // devices (fit keeps a copy of the model per device) and without mirroring variables (fit mirrors them first).
  // Returns every replica's result, replica 0's first.
  template <class F>
  auto run_replica_parts(F&& fn, const data::Element& batch) const;
  // Sums the variables' values over the workers, in place (TF: SyncOnReadVariable's SUM aggregation; how metric
  // states are read). Returns the previous local values, for the caller to assign back.
  std::vector<Tensor> sum_variables(const std::vector<Variable>& vars, const std::string& who) const;

  struct Impl;
  explicit Strategy(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  const std::shared_ptr<Impl>& impl() const { return impl_; }

 protected:
  std::shared_ptr<Impl> impl_;

 private:
  // same_device: refuse replicas of this process on different devices (run's; fit's run_replica_parts allows them).
  void enter_replica(int replica, bool same_device = true) const;
  void exit_replica() const;
  // Leaves the replica entered last when it goes (run's loop, also when fn throws).
  struct ReplicaExit {
    const Strategy* s;
    ~ReplicaExit() { s->exit_replica(); }
  };
  // After the last replica of a run: InvalidArgument when some replicas applied gradients and the others not.
  void finish_replicas() const;
  // The rows of replica `replica`'s part of a batch of experimental_distribute_dataset (see replica_parts).
  data::Element replica_part(const data::Element& batch, int replica) const;
  template <class T>
  decltype(auto) replica_argument(T&& arg, int replica) const {
    using U = std::remove_cvref_t<T>;
    if constexpr (std::is_same_v<U, data::Element>) return replica_part(arg, replica);
    else if constexpr (is_per_replica<U>::value) {
      check_per_replica(arg.values.size(), "an argument");
      return arg.values[static_cast<size_t>(replica)];
    } else return std::forward<T>(arg);
  }
  void check_per_replica(size_t values, const std::string& what) const;
};

// Synchronous training on every worker of an MPI job, one replica each (TF:
// tf.distribute.MultiWorkerMirroredStrategy). Initialises MPI on first construction (MPI_Init_thread).
class MultiWorkerMirroredStrategy : public Strategy {
 public:
  explicit MultiWorkerMirroredStrategy(MultiWorkerMirroredStrategyOptions options = {});
};

struct MirroredStrategyOptions {
  // The devices to replicate on; empty: every visible GPU, else the CPU.
  std::vector<Device> devices{};
};

// Synchronous training on the devices of this process, a replica per device (TF: tf.distribute.MirroredStrategy).
// Replica 0 is the model itself, whose variables should live on the first device (the default device, or build
// the model under a DeviceScope); every other replica is a copy of the model (models::clone_model: Sequential
// and functional models) on its device, whose variables take the model's values before every step (TF's
// mirrored variables). fit cuts each global batch into one part per replica, runs every replica on its part on
// its device, applies the mean of their gradients (gathered on the first device and summed replica by replica,
// in order: the same weights on every run) once, sets the variables the forward pass assigns (BatchNormalization's
// moving statistics) to the mean of the replicas' values, and adds every part to the metrics. A device may be
// given more than once (TF's logical devices: {Device::cpu(), Device::cpu()} is two replicas on the CPU). With one
// device it trains as that device alone (on a GPU its gradients go through NCCL, as TF's do).
class MirroredStrategy : public Strategy {
 public:
  explicit MirroredStrategy(MirroredStrategyOptions options = {});
};

// Strategy::scope()'s guard: enters on construction, leaves on destruction.
class StrategyScope {
 public:
  explicit StrategyScope(Strategy strategy);
  ~StrategyScope();
  StrategyScope(const StrategyScope&) = delete;
  StrategyScope& operator=(const StrategyScope&) = delete;
  StrategyScope(StrategyScope&& other) noexcept;
  StrategyScope& operator=(StrategyScope&&) = delete;

 private:
  std::optional<Strategy> strategy_;
};

// The strategy of the innermost scope on this thread, if any (TF: tf.distribute.get_strategy / has_strategy).
std::optional<Strategy> get_strategy();
bool has_strategy();

// Inside Strategy::run: this replica's view (TF: tf.distribute.get_replica_context()).
class ReplicaContext {
 public:
  ReplicaContext(Strategy strategy, int replica_in_process)
      : strategy_(std::move(strategy)), replica_(replica_in_process) {}
  int num_replicas_in_sync() const { return strategy_.num_replicas_in_sync(); }
  // This replica's index among the replicas of this process.
  int replica_in_process() const { return replica_; }
  // The worker's rank times its replicas, plus this replica's index in the process.
  int replica_id_in_sync_group() const {
    return strategy_.cluster_resolver().task_id * strategy_.num_replicas_in_process() + replica_;
  }
  // The values combined over the replicas (every replica's call takes part). With several replicas in this
  // process an Unimplemented: they run one after another, so none can wait for the others' values; apply the
  // gradients with the optimizer, which combines them.
  std::vector<Tensor> all_reduce(ReduceOp op, const std::vector<Tensor>& values) const;
  // Optimizer::apply's gradients (TF: the optimizer's all-reduce SUM, then merge_call): with one replica in this
  // process, `grads` summed over the workers. With several, this replica's `grads` are kept under `key` and
  // nothing is returned, until the last replica, which gets the replicas' sum (Strategy::combine_replica_gradients)
  // to apply once.
  std::optional<std::vector<Tensor>> merge_gradients(const void* key, const std::vector<Tensor>& grads) const;
  const Strategy& strategy() const { return strategy_; }

 private:
  Strategy strategy_;
  int replica_ = 0;
};
// The context of the Strategy::run on this thread; none outside one.
std::optional<ReplicaContext> get_replica_context();
// The gradients an optimizer's apply applies now: inside Strategy::run, the replicas' sum (TF's optimizer
// all-reduces them with SUM; get_replica_context()->merge_gradients: nothing before the last replica of this
// process); elsewhere `grads`.
std::optional<std::vector<Tensor>> merge_gradients(const void* key, const std::vector<Tensor>& grads);

// While it lives, this thread is outside the replica context of any Strategy::run (TF: the cross-replica context
// of merge_call), so an optimizer's apply applies what it is given as it is: how a wrapper that has combined the
// replicas' gradients itself (LossScaleOptimizer) hands them to the optimizer it wraps.
class CrossReplicaScope {
 public:
  CrossReplicaScope();
  ~CrossReplicaScope();
  CrossReplicaScope(const CrossReplicaScope&) = delete;
  CrossReplicaScope& operator=(const CrossReplicaScope&) = delete;

 private:
  std::vector<std::pair<Strategy, int>> saved_;
};

template <class F, class... Args>
auto Strategy::run(F&& fn, Args&&... args) const {
  mirror_variables("Strategy.run");
  auto in_scope = scope();
  using R = decltype(fn(replica_argument(args, 0)...));
  const int n = num_replicas_in_process();
  if constexpr (std::is_void_v<R>) {
    for (int r = 0; r < n; ++r) {
      enter_replica(r);
      ReplicaExit exit{this};
      fn(replica_argument(args, r)...);
    }
    finish_replicas();
  } else {
    PerReplica<std::remove_cvref_t<R>> out;
    for (int r = 0; r < n; ++r) {
      enter_replica(r);
      ReplicaExit exit{this};
      out.values.push_back(fn(replica_argument(args, r)...));
    }
    finish_replicas();
    return out;
  }
}

template <class F>
auto Strategy::run_replica_parts(F&& fn, const data::Element& batch) const {
  std::vector<decltype(fn(batch))> out;
  for (int r = 0; r < num_replicas_in_process(); ++r) {
    enter_replica(r, /*same_device=*/false);
    ReplicaExit exit{this};
    out.push_back(fn(replica_part(batch, r)));
  }
  finish_replicas();
  return out;
}

}  // namespace ember::distribute
