#include "framework/distribute/strategy.h"

#include <algorithm>
#include <map>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>

#include "framework/autodiff/variable_hooks.h"
#include "framework/core/allocator.h"
#include "framework/core/error.h"
#include "framework/distribute/communicator.h"
#ifdef EMBER_WITH_NCCL
#include "framework/distribute/nccl_communicator.h"
#endif
#include "framework/graph/trace.h"
#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/random.h"

namespace ember::distribute {

using detail::Communicator;

struct Strategy::Impl {
  std::string name;
  Communicator* comm = nullptr;
  double timeout_seconds = 600;
  size_t bytes_per_pack = size_t{32} << 20;
  bool bytes_per_pack_set = false;  // by the options (else every pack but the first is 32 MiB, that 1 MiB)
  bool overlap = false;             // MultiWorkerMirroredStrategyOptions::overlap_gradients
  std::vector<Device> devices;  // MirroredStrategy's
  int replicas_in_process = 1;  // MirroredStrategy's devices
  // NCCL: the GPU the all-reduce runs on (-1: MPI through host memory), and its communicator, made at the first
  // all-reduce.
  int nccl_device = -1;
#ifdef EMBER_WITH_NCCL
  std::shared_ptr<detail::NcclCommunicator> nccl;
  // MirroredStrategy's replicas on distinct GPUs: NCCL between them, made at the first combine.
  std::shared_ptr<detail::NcclLocalGroup> local_nccl;
#endif
  // Variables created in the scope and not yet broadcast, in creation order (the same on every worker running
  // the same program).
  std::vector<Variable> pending;
  // Inside run with several replicas in this process: the gradients each optimizer (the key) was given by the
  // replicas that have applied so far.
  std::map<const void*, std::vector<std::vector<Tensor>>> merging;
};

namespace {

thread_local std::vector<Strategy> t_scopes;       // innermost last
// Strategy::run's on this thread, innermost last, with the replica of the process running.
thread_local std::vector<std::pair<Strategy, int>> t_replicas;

void track_created(const Variable& v) {
  if (!t_scopes.empty()) t_scopes.back().impl()->pending.push_back(v);
}

// Buffers of collectives that timed out: MPI may still write them, so they are never freed.
void keep_forever(std::vector<char>&& buffer) { new std::vector<char>(std::move(buffer)); }
void keep_forever(const Tensor& buffer) { new Tensor(buffer); }

std::vector<char> host_bytes(const Tensor& t) {
  const Tensor host = t.to(Device::cpu());
  std::vector<char> bytes(host.nbytes());
  if (!bytes.empty()) std::memcpy(bytes.data(), host.raw_data(), bytes.size());
  return bytes;
}

Tensor tensor_from_bytes(const char* bytes, const Shape& shape, DType dtype, Device device) {
  Tensor t = Tensor::empty(shape, dtype, Device::cpu());
  if (t.nbytes()) std::memcpy(t.raw_data(), bytes, t.nbytes());
  return device == Device::cpu() ? t : t.to(device);
}

std::string describe(const Variable& v) {
  std::ostringstream os;
  os << "'" << v.name() << "' " << dtype_name(v.value().dtype()) << " " << v.value().shape();
  return os.str();
}

uint64_t fnv(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
  return h;
}

// The variables' shapes and dtypes as one number (names may differ without harm).
uint64_t signature(const std::vector<Variable>& vars) {
  uint64_t h = 1469598103934665603ull;
  for (const Variable& v : vars) {
    h = fnv(h, static_cast<uint64_t>(v.value().dtype()));
    h = fnv(h, static_cast<uint64_t>(v.value().shape().rank()));
    for (int64_t d : v.value().shape().dims()) h = fnv(h, static_cast<uint64_t>(d));
  }
  return h;
}

std::vector<uint64_t> pack_generator_state(const random::GeneratorState& s) {
  std::vector<uint64_t> out{s.global_seed.has_value(), s.global_seed.value_or(0), s.op_seed_counter,
                            s.next_blocks.size()};
  for (const auto& b : s.next_blocks) out.insert(out.end(), b.begin(), b.end());
  return out;
}

random::GeneratorState unpack_generator_state(const std::vector<uint64_t>& in) {
  random::GeneratorState s;
  if (in[0]) s.global_seed = in[1];
  s.op_seed_counter = in[2];
  for (uint64_t i = 0; i < in[3]; ++i) s.next_blocks.push_back({in[4 + 3 * i], in[5 + 3 * i], in[6 + 3 * i]});
  return s;
}

}  // namespace

// ---------------------------------------------------------------- Strategy

int Strategy::num_replicas_in_sync() const { return impl_->comm->size() * impl_->replicas_in_process; }

int Strategy::num_replicas_in_process() const { return impl_->replicas_in_process; }

const std::vector<Device>& Strategy::devices() const { return impl_->devices; }

ClusterResolver Strategy::cluster_resolver() const {
  return {.task_type = "worker", .task_id = impl_->comm->rank(), .num_workers = impl_->comm->size()};
}

StrategyScope Strategy::scope() const { return StrategyScope(*this); }

void Strategy::enter_replica(int replica, bool same_device) const {
  Impl& impl = *impl_;
  if (replica == 0 && impl.replicas_in_process > 1) {
    for (const Device& d : impl.devices)
      EMBER_CHECK(!same_device || d == impl.devices[0], Unimplemented)
          << impl.name << ".run: the replicas of one process run on the model's own variables, so they must share "
          << "one device, but they are on " << impl.devices[0] << " and " << d
          << "; train on several devices with fit, or run one replica per process (MultiWorkerMirroredStrategy "
          << "under mpirun -np " << impl.replicas_in_process << ")";
    impl.merging.clear();  // left by a run that an error cut short
  }
  t_replicas.emplace_back(*this, replica);
}
void Strategy::exit_replica() const { t_replicas.pop_back(); }

void Strategy::finish_replicas() const {
  Impl& impl = *impl_;
  const bool partial = !impl.merging.empty();
  impl.merging.clear();
  EMBER_CHECK(!partial, InvalidArgument)
      << impl.name << ".run: some replicas applied gradients with an optimizer and the last one did not; every "
      << "replica must apply its gradients (the optimizer applies their sum when the last one does)";
}

void Strategy::check_per_replica(size_t values, const std::string& what) const {
  EMBER_CHECK(values == static_cast<size_t>(impl_->replicas_in_process), InvalidArgument)
      << impl_->name << ": " << what << " is a PerReplica of " << values << " values, but this process runs "
      << impl_->replicas_in_process << " replicas; give one value per replica";
}

data::Element Strategy::replica_part(const data::Element& batch, int replica) const {
  const int n = impl_->replicas_in_process;
  if (n == 1) return batch;
  EMBER_CHECK(batch.size() % static_cast<size_t>(n) == 0, InvalidArgument)
      << impl_->name << ".run: a data::Element argument is taken as a batch of experimental_distribute_dataset, "
      << "one part per replica, but it holds " << batch.size() << " tensors for " << n
      << " replicas; pass the distributed dataset's batches, or a PerReplica";
  return replica_parts(batch, impl_->name + ".run")[static_cast<size_t>(replica)];
}

// The NCCL path: one pack per dtype, made and handed out by ops on the GPU, all-reduced there.
static std::vector<Tensor> all_reduce_nccl(Strategy::Impl& impl, ReduceOp op, const std::vector<Tensor>& values,
                                           const std::string& what) {
#ifdef EMBER_WITH_NCCL
  if (!impl.nccl) impl.nccl = std::make_shared<detail::NcclCommunicator>(*impl.comm, impl.nccl_device, impl.timeout_seconds);
  const Device device = Device::cuda(impl.nccl_device);
  std::vector<Tensor> out(values.size());
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    std::vector<size_t> members;
    std::vector<Tensor> flat;
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i].defined() && values[i].dtype() == dtype) {
        members.push_back(i);
        Tensor v = ops::reshape(values[i].to(device), {values[i].num_elements()});
        flat.push_back(op == ReduceOp::MEAN ? v * Tensor::scalar_of(1.0 / impl.comm->size(), dtype, device) : v);
      }
    if (members.empty()) continue;
    Tensor pack = flat.size() == 1 ? flat[0].clone() : ops::concat(flat, 0);
    impl.nccl->all_reduce_sum(pack.raw_data(), static_cast<size_t>(pack.num_elements()), dtype, impl.timeout_seconds, what);
    int64_t at = 0;
    for (size_t m : members) {
      const int64_t k = values[m].num_elements();
      out[m] = pack.slice_rows(at, at + k).view(values[m].shape());
      at += k;
    }
  }
  return out;
#else
  throw make_error<Internal>(what, ": NCCL is not in this build");
#endif
}

namespace {

// Tensors of one dtype all-reduced together over MPI: each one scaled (MEAN: by 1/n, exact for a power-of-two
// number of workers; TF scales the loss so) into one buffer, summed into another, and handed out as views of it.
struct Pack {
  DType dtype = DType::Float32;
  std::vector<size_t> members;  // the tensors' indices in the caller's list
  // Set when started, per member: where its elements begin in the buffer (-1: undefined), its shape and device.
  std::vector<int64_t> offsets;
  std::vector<Shape> shapes;
  std::vector<Device> devices;
  Tensor source;  // what is summed: the members packed, or a lone SUM member itself
  Tensor buffer;  // the sums
  uint64_t ticket = 0;
  bool running = false;  // started and not finished
};

// `values` (those in `order` that are defined) in packs of consecutive tensors of one dtype: up to `first_bytes`
// bytes for the first pack, `bytes` for the others (a tensor larger than that is a pack of its own).
std::vector<Pack> plan_packs(const std::vector<Tensor>& values, const std::vector<size_t>& order, size_t first_bytes,
                             size_t bytes) {
  std::vector<Pack> packs;
  size_t filled = 0;
  for (size_t i : order) {
    const Tensor& v = values[i];
    if (!v.defined()) continue;
    const size_t cap = packs.size() == 1 ? first_bytes : bytes;
    if (packs.empty() || packs.back().dtype != v.dtype() || filled + v.nbytes() > cap) {
      packs.emplace_back().dtype = v.dtype();
      filled = 0;
    }
    packs.back().members.push_back(i);
    filled += v.nbytes();
  }
  return packs;
}

// Packs `in` (one tensor per member, undefined ones left out) and starts its all-reduce.
void start_pack(Communicator& comm, Pack& pack, ReduceOp op, std::span<const Tensor> in, const std::string& what) {
  pack.offsets.assign(in.size(), -1);
  pack.shapes.assign(in.size(), Shape{});
  pack.devices.assign(in.size(), Device::cpu());
  int64_t count = 0;
  size_t defined = 0;
  for (size_t j = 0; j < in.size(); ++j) {
    if (!in[j].defined()) continue;
    EMBER_CHECK(in[j].dtype() == pack.dtype, Internal)
        << what << ": a gradient is " << dtype_name(in[j].dtype()) << ", its variable " << dtype_name(pack.dtype);
    pack.offsets[j] = count;
    pack.shapes[j] = in[j].shape();
    pack.devices[j] = in[j].device();
    count += in[j].num_elements();
    ++defined;
  }
  // The sums go to a buffer of their own (see Communicator::all_reduce_sum): a lone SUM tensor is summed from
  // where it is, the others are packed first.
  pack.buffer = Tensor::empty(Shape{count}, pack.dtype, Device::cpu());
  const double scale = op == ReduceOp::MEAN ? 1.0 / comm.size() : 1.0;
  if (defined == 1 && scale == 1.0) {
    for (const Tensor& t : in)
      if (t.defined()) pack.source = t.to(Device::cpu());
  } else {
    pack.source = Tensor::empty(Shape{count}, pack.dtype, Device::cpu());
    for (size_t j = 0; j < in.size(); ++j) {
      if (!in[j].defined()) continue;
      const Tensor host = in[j].to(Device::cpu());
      const int64_t k = host.num_elements();
      if (pack.dtype == DType::Float32) {
        const float* src = host.data<float>();
        float* dst = pack.source.data<float>() + pack.offsets[j];
        const auto f = static_cast<float>(scale);
        for (int64_t e = 0; e < k; ++e) dst[e] = src[e] * f;
      } else {
        const double* src = host.data<double>();
        double* dst = pack.source.data<double>() + pack.offsets[j];
        for (int64_t e = 0; e < k; ++e) dst[e] = src[e] * scale;
      }
    }
  }
  pack.ticket = comm.start_all_reduce_sum(pack.source.raw_data(), pack.buffer.raw_data(), static_cast<size_t>(count),
                                          pack.dtype, what);
  pack.running = true;
}

// Waits for the pack's all-reduce: its members' results (undefined for undefined inputs), views of the buffer.
std::vector<Tensor> finish_pack(Communicator& comm, Pack& pack, double timeout_seconds, const std::string& what) {
  comm.wait(pack.ticket, timeout_seconds, what);
  pack.running = false;
  pack.source = Tensor();
  const Tensor buffer = std::move(pack.buffer);  // the results' views alone keep it
  std::vector<Tensor> out(pack.offsets.size());
  for (size_t j = 0; j < out.size(); ++j) {
    if (pack.offsets[j] < 0) continue;
    Tensor part = buffer.slice_rows(pack.offsets[j], pack.offsets[j] + pack.shapes[j].num_elements())
                      .view(pack.shapes[j]);
    out[j] = pack.devices[j] == Device::cpu() ? part : part.to(pack.devices[j]);
  }
  return out;
}

// Packs whose all-reduce is still running when a collective failed: MPI may still write (or read) their
// buffers, so they are never freed.
void keep_running_forever(std::vector<Pack>& packs) {
  for (Pack& p : packs)
    if (p.running) {
      keep_forever(p.buffer);
      keep_forever(p.source);
      p.running = false;
    }
}

// Tests the oldest running pack: MPI moves every running collective on inside the call.
void progress(Communicator& comm, std::vector<Pack>& packs, const std::string& what) {
  for (Pack& p : packs)
    if (p.running) {
      comm.test(p.ticket, what);
      return;
    }
}

}  // namespace

std::vector<Tensor> Strategy::all_reduce(ReduceOp op, const std::vector<Tensor>& values) const {
  const std::string what = impl_->name + ": all-reduce of " + std::to_string(values.size()) + " tensors";
  for (const Tensor& t : values)
    EMBER_CHECK(!t.defined() || t.dtype() == DType::Float32 || t.dtype() == DType::Float64, InvalidArgument)
        << what << ": tensors must be float32 or float64, got " << dtype_name(t.dtype()) << " " << t.shape();
  // One replica: its values are the sum and the mean (NCCL still runs, as TF runs it for one GPU).
  if (impl_->comm->size() == 1 && impl_->nccl_device < 0) return values;
  if (graph::is_tracing())
    return graph::host_call(impl_->name + ".all_reduce", values, [s = *this, op](std::span<const Tensor> in) {
      return s.all_reduce(op, std::vector<Tensor>(in.begin(), in.end()));
    });
  if (impl_->nccl_device >= 0) return all_reduce_nccl(*impl_, op, values, what);
  Communicator& comm = *impl_->comm;
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<Pack> packs = plan_packs(values, order, impl_->bytes_per_pack, impl_->bytes_per_pack);
  // Every pack started, then each waited for: MPI runs them one after another without a pause between.
  std::vector<Tensor> out(values.size());
  try {
    for (Pack& p : packs) {
      std::vector<Tensor> in;
      for (size_t m : p.members) in.push_back(values[m]);
      start_pack(comm, p, op, in, what);
    }
    for (Pack& p : packs) {
      const std::vector<Tensor> results = finish_pack(comm, p, impl_->timeout_seconds, what);
      for (size_t j = 0; j < results.size(); ++j) out[p.members[j]] = results[j];
    }
  } catch (...) {
    keep_running_forever(packs);
    throw;
  }
  return out;
}

std::vector<Tensor> Strategy::reduced_gradients(ReduceOp op, GradientTape& tape, const Tensor& target,
                                                const std::vector<Variable>& variables) const {
  Impl& impl = *impl_;
  if (!impl.overlap || impl.nccl_device >= 0 || impl.comm->size() == 1)
    return all_reduce(op, tape.gradient(target, variables));
  const std::string what =
      impl.name + ": all-reduce of the gradients of " + std::to_string(variables.size()) + " variables";
  std::vector<Tensor> values;
  for (const Variable& v : variables) {
    values.push_back(v.value());
    EMBER_CHECK(v.value().dtype() == DType::Float32 || v.value().dtype() == DType::Float64, InvalidArgument)
        << what << ": gradients must be float32 or float64, got " << dtype_name(v.value().dtype()) << " for "
        << describe(v);
  }
  // The last variables' gradients come first out of the backward pass: they fill the first packs.
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
  const size_t first = impl.bytes_per_pack_set ? impl.bytes_per_pack : std::min(impl.bytes_per_pack, size_t{1} << 20);
  // Shared with the traced step's host calls, which start and finish the packs on every call.
  auto packs = std::make_shared<std::vector<Pack>>(plan_packs(values, order, first, impl.bytes_per_pack));
  std::vector<size_t> pack_of(values.size()), left(packs->size());
  for (size_t p = 0; p < packs->size(); ++p) {
    left[p] = (*packs)[p].members.size();
    for (size_t m : (*packs)[p].members) pack_of[m] = p;
  }
  Communicator& comm = *impl.comm;
  std::vector<Tensor> grads(values.size());
  GradientOptions options;
  options.on_gradient_ready = [&](size_t k, const Tensor& g) {
    grads[k] = g;
    const size_t p = pack_of[k];
    if (--left[p]) return;
    std::vector<Tensor> in;
    for (size_t m : (*packs)[p].members) in.push_back(grads[m]);
    graph::host_call(impl.name + ".all_reduce_start", in, [packs, p, op, &comm, what](std::span<const Tensor> in) {
      progress(comm, *packs, what);
      start_pack(comm, (*packs)[p], op, in, what);
      return std::vector<Tensor>{};
    });
  };
  options.on_backward_op = [&] { progress(comm, *packs, what); };
  try {
    tape.gradient(target, variables, options);
  } catch (...) {
    // This worker leaves collectives running that the others may wait for: it cannot take part in more.
    if (std::any_of(packs->begin(), packs->end(), [](const Pack& p) { return p.running; })) {
      keep_running_forever(*packs);
      comm.abandon();
    }
    throw;
  }
  const double timeout = impl.timeout_seconds;
  return graph::host_call(impl.name + ".all_reduce_finish", {}, [packs, &comm, timeout, what, n = values.size()](std::span<const Tensor>) {
    std::vector<Tensor> out(n);
    try {
      for (Pack& p : *packs) {
        const std::vector<Tensor> results = finish_pack(comm, p, timeout, what);
        for (size_t j = 0; j < results.size(); ++j) out[p.members[j]] = results[j];
      }
    } catch (...) {
      keep_running_forever(*packs);
      throw;
    }
    return out;
  });
}

Tensor Strategy::reduce(ReduceOp op, const Tensor& value) const {
  EMBER_CHECK(value.defined(), InvalidArgument) << impl_->name << ".reduce: the value is an undefined tensor";
  // TF: summing a value that every replica holds alike is not defined (reduce_non_distributed_value).
  EMBER_CHECK(op != ReduceOp::SUM || impl_->replicas_in_process == 1, InvalidArgument)
      << impl_->name << ".reduce: SUM of a tensor, which is taken as the same value on each of the "
      << impl_->replicas_in_process << " replicas of this process " << value.shape()
      << "; pass a PerReplica (what strategy.run returns) to sum the replicas' values, or reduce with MEAN";
  return all_reduce(op, {value})[0];
}

Tensor Strategy::reduce(ReduceOp op, const PerReplica<Tensor>& value) const {
  check_per_replica(value.values.size(), "reduce's value");
  std::vector<std::vector<Tensor>> parts;
  for (const Tensor& t : value.values) {
    EMBER_CHECK(t.defined(), InvalidArgument) << impl_->name << ".reduce: a replica's value is an undefined tensor";
    EMBER_CHECK(t.shape() == value.values[0].shape() && t.dtype() == value.values[0].dtype(), InvalidArgument)
        << impl_->name << ".reduce: the replicas' values differ: " << dtype_name(t.dtype()) << " " << t.shape()
        << " and " << dtype_name(value.values[0].dtype()) << " " << value.values[0].shape()
        << "; every replica must give the same shape and dtype";
    parts.push_back({t});
  }
  return combine_replica_gradients(op, parts)[0];
}

// The rows of part k of n of every tensor of `batch` (undefined tensors stay undefined).
static data::Element part_of(const data::Element& batch, int k, int n) {
  data::Element part;
  for (const Tensor& t : batch) {
    const int64_t rows = t.defined() ? t.shape()[0] : 0;
    part.push_back(t.defined() ? t.slice_rows(rows / n * k, rows / n * (k + 1)) : t);
  }
  return part;
}

data::Element Strategy::local_batch(const data::Element& global_batch, const std::string& who) const {
  const int n = num_replicas_in_sync();
  if (n == 1) return global_batch;
  for (const Tensor& t : global_batch) {
    if (!t.defined()) continue;
    EMBER_CHECK(t.rank() > 0, InvalidArgument)
        << who << ": " << impl_->name << " splits each batch across " << n
        << " replicas along its first axis, but a batch holds a scalar; batch the data";
    const int64_t rows = t.shape()[0];
    EMBER_CHECK(rows % n == 0, InvalidArgument)
        << who << ": a global batch of " << rows << " samples cannot be split evenly across " << n
        << " replicas; make every batch a multiple of " << n
        << " (a global batch size divisible by num_replicas_in_sync(), and batch(..., {.drop_remainder = true}) "
           "or a sample count divisible by it, for the last batch)";
  }
  const Communicator& comm = *impl_->comm;
  return comm.size() == 1 ? global_batch : part_of(global_batch, comm.rank(), comm.size());
}

data::Element Strategy::replica_batches(const data::Element& global_batch, const std::string& who) const {
  const data::Element local = local_batch(global_batch, who);
  const int n = impl_->replicas_in_process;
  if (n == 1) return local;
  data::Element parts;
  for (int r = 0; r < n; ++r) {
    const data::Element part = part_of(local, r, n);
    parts.insert(parts.end(), part.begin(), part.end());
  }
  return parts;
}

std::vector<data::Element> Strategy::replica_parts(const data::Element& batch, const std::string& who) const {
  const auto n = static_cast<size_t>(impl_->replicas_in_process);
  EMBER_CHECK(batch.size() % n == 0, Internal)
      << who << ": a batch of " << batch.size() << " tensors is not " << n << " replicas' parts";
  const size_t k = batch.size() / n;
  std::vector<data::Element> parts;
  for (size_t r = 0; r < n; ++r)
    parts.emplace_back(batch.begin() + static_cast<std::ptrdiff_t>(r * k),
                       batch.begin() + static_cast<std::ptrdiff_t>((r + 1) * k));
  return parts;
}

#ifdef EMBER_WITH_NCCL
// Whether the replicas of this process are on distinct GPUs, which NCCL connects (one GPU too, as TF runs NCCL
// for one).
static bool on_distinct_gpus(const std::vector<Device>& devices) {
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].is_cuda()) return false;
    for (size_t j = 0; j < i; ++j)
      if (devices[j] == devices[i]) return false;
  }
  return !devices.empty();
}

// combine_replica_gradients through NCCL: each replica's gradients of one dtype packed on its GPU (scaled by 1/n
// for MEAN, as below), the packs all-reduced among the GPUs, replica 0's pack handed out.
static std::vector<Tensor> combine_nccl(Strategy::Impl& impl, ReduceOp op,
                                        const std::vector<std::vector<Tensor>>& grads) {
  const std::string what = impl.name + ": all-reduce of the replicas' gradients between the GPUs";
  if (!impl.local_nccl) {
    std::vector<int> indices;
    for (const Device& d : impl.devices) indices.push_back(d.index());
    impl.local_nccl = std::make_shared<detail::NcclLocalGroup>(indices);
  }
  const size_t n = grads.size();
  std::vector<Tensor> out(grads[0].size());
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    std::vector<size_t> members;  // the gradients some replica made, of this dtype
    for (size_t i = 0; i < out.size(); ++i)
      for (size_t r = 0; r < n; ++r)
        if (grads[r][i].defined()) {
          if (grads[r][i].dtype() == dtype) members.push_back(i);
          break;
        }
    if (members.empty()) continue;
    std::vector<Tensor> packs;
    std::vector<void*> buffers;
    for (size_t r = 0; r < n; ++r) {
      const Device device = impl.devices[r];
      std::vector<Tensor> flat;
      for (size_t i : members) {
        Tensor g = grads[r][i];
        if (!g.defined())  // unconnected on this replica: it adds nothing
          for (size_t q = 0; q < n && !g.defined(); ++q)
            if (grads[q][i].defined()) g = ops::zeros_like(grads[q][i]);
        g = ops::reshape(g.to(device), {g.num_elements()});
        flat.push_back(op == ReduceOp::MEAN ? g * Tensor::scalar_of(1.0 / static_cast<double>(n), dtype, device) : g);
      }
      packs.push_back(flat.size() == 1 ? flat[0].clone() : ops::concat(flat, 0));
      buffers.push_back(packs.back().raw_data());
    }
    impl.local_nccl->all_reduce_sum(buffers, static_cast<size_t>(packs[0].num_elements()), dtype,
                                    impl.timeout_seconds, what);
    int64_t at = 0;
    for (size_t i : members) {
      Shape shape;
      for (size_t r = 0; r < n; ++r)
        if (grads[r][i].defined()) {
          shape = grads[r][i].shape();
          break;
        }
      const int64_t k = shape.num_elements();
      out[i] = packs[0].slice_rows(at, at + k).view(shape);
      at += k;
    }
  }
  return out;
}
#endif

std::vector<Tensor> Strategy::combine_replica_gradients(ReduceOp op, const std::vector<std::vector<Tensor>>& grads) const {
  EMBER_CHECK(!grads.empty(), Internal) << impl_->name << ": no replica's gradients to combine";
  const size_t n = grads.size();
#ifdef EMBER_WITH_NCCL
  if (on_distinct_gpus(impl_->devices)) return all_reduce(op, combine_nccl(*impl_, op, grads));
#endif
  std::vector<Tensor> out(grads[0].size());
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t r = 0; r < n; ++r) {
      Tensor g = grads[r][i];
      if (!g.defined()) continue;
      // Scaled before the sum, as the workers' MEAN scales each value: exact for a power-of-two replica count.
      if (out[i].defined()) g = g.to(out[i].device());
      else if (!impl_->devices.empty()) g = g.to(impl_->devices[0]);
      if (op == ReduceOp::MEAN && n > 1) g = g * Tensor::scalar_of(1.0 / static_cast<double>(n), g.dtype(), g.device());
      out[i] = out[i].defined() ? out[i] + g : g;
    }
  return all_reduce(op, out);
}

data::Dataset Strategy::experimental_distribute_dataset(const data::Dataset& dataset) const {
  return dataset.map(
      [s = *this](const data::Element& e) { return s.replica_batches(e, "experimental_distribute_dataset"); });
}

void Strategy::mirror_variables(const std::string& who, const std::vector<Variable>& also) const {
  // Once, now, outside any function being traced (as a variable's initialiser is): a traced assignment would
  // put the chief's initial values back on every call.
  graph::SuspendTracing untraced;
  Impl& impl = *impl_;
  Communicator& comm = *impl.comm;
  const std::string what = who + ": " + impl.name + " mirroring variables";
  std::vector<Variable> vars = std::move(impl.pending);
  impl.pending.clear();
  for (const Variable& v : also)
    if (std::none_of(vars.begin(), vars.end(), [&](const Variable& w) { return w.handle() == v.handle(); }))
      vars.push_back(v);
  if (comm.size() == 1) return;

  // The same variables everywhere? Compare the count and a signature of the shapes and dtypes with the chief's.
  const std::vector<uint64_t> all =
      comm.all_gather({vars.size(), signature(vars)}, impl.timeout_seconds, what + " (comparing the variables)");
  std::vector<int> differ;
  for (int r = 1; r < comm.size(); ++r)
    if (all[2 * static_cast<size_t>(r)] != all[0] || all[2 * static_cast<size_t>(r) + 1] != all[1]) differ.push_back(r);
  if (!differ.empty()) {
    // Every worker learns every worker's variables (their descriptions gathered, padded to one length), so that
    // all of them name the same differences.
    std::string mine;
    for (const Variable& v : vars) mine += describe(v) + "\n";
    const std::vector<uint64_t> lengths = comm.all_gather({mine.size()}, impl.timeout_seconds, what);
    const size_t words = (*std::max_element(lengths.begin(), lengths.end()) + 7) / 8;
    std::vector<uint64_t> packed(words, 0);
    std::memcpy(packed.data(), mine.data(), mine.size());
    const std::vector<uint64_t> everyone = comm.all_gather(packed, impl.timeout_seconds, what);
    auto lines_of = [&](int r) {
      std::string text(reinterpret_cast<const char*>(everyone.data() + static_cast<size_t>(r) * words),
                       lengths[static_cast<size_t>(r)]);
      std::vector<std::string> lines;
      std::istringstream in(text);
      for (std::string line; std::getline(in, line);) lines.push_back(line);
      return lines;
    };
    const std::vector<std::string> chief = lines_of(0);
    std::ostringstream os;
    os << what << ": the workers created different variables in the strategy's scope, so they cannot be mirrored";
    for (int r : differ) {
      const std::vector<std::string> theirs = lines_of(r);
      os << "; worker " << r << " has " << theirs.size() << " variables, the chief (worker 0) " << chief.size();
      for (size_t i = 0; i < std::max(theirs.size(), chief.size()); ++i) {
        const std::string a = i < theirs.size() ? theirs[i] : "none", b = i < chief.size() ? chief[i] : "none";
        // Names may differ harmlessly; compare what follows the name.
        auto tail = [](const std::string& t) { return t.substr(t.rfind('\'') + 1); };
        if (tail(a) != tail(b)) {
          os << ", and the first difference is variable " << i << ": " << a << " on worker " << r << ", " << b
             << " on the chief";
          break;
        }
      }
    }
    os << ". Build the same model (the same layers, units and inputs) on every worker";
    throw InvalidArgument(os.str());
  }

  size_t total = 0;
  for (const Variable& v : vars) {
    EMBER_CHECK(v.value().dtype() != DType::String, InvalidArgument)
        << who << ": variable " << describe(v) << " holds strings, which are not mirrored across workers";
    total += v.value().nbytes();
  }
  std::vector<char> bytes(total);
  if (comm.rank() == 0) {
    size_t offset = 0;
    for (const Variable& v : vars) {
      const std::vector<char> b = host_bytes(v.value());
      if (!b.empty()) std::memcpy(bytes.data() + offset, b.data(), b.size());
      offset += b.size();
    }
  }
  try {
    comm.broadcast(bytes.data(), bytes.size(), 0, impl.timeout_seconds, what);
  } catch (const DeadlineExceeded&) {
    keep_forever(std::move(bytes));
    throw;
  }
  if (comm.rank() == 0) return;
  size_t offset = 0;
  for (Variable& v : vars) {
    const Tensor& value = v.value();
    v.assign(tensor_from_bytes(bytes.data() + offset, value.shape(), value.dtype(), value.device()));
    offset += value.nbytes();
  }
}

void Strategy::sync_random_state(const std::string& who) const {
  Communicator& comm = *impl_->comm;
  if (comm.size() == 1) return;
  const std::string what = who + ": " + impl_->name + " sharing the chief's random generator state";
  std::vector<uint64_t> state;
  if (comm.rank() == 0) {
    // Unseeded draws differ between processes: give the job one seed, so the workers shuffle alike.
    if (!random::get_global_generator_state().global_seed) random::set_seed(std::random_device{}());
    state = pack_generator_state(random::get_global_generator_state());
  }
  uint64_t size = state.size();
  comm.broadcast(&size, sizeof size, 0, impl_->timeout_seconds, what);
  state.resize(size);
  comm.broadcast(state.data(), size * sizeof(uint64_t), 0, impl_->timeout_seconds, what);
  if (comm.rank() != 0) random::set_global_generator_state(unpack_generator_state(state));
}

std::vector<Tensor> Strategy::sum_variables(const std::vector<Variable>& vars, const std::string& who) const {
  std::vector<Tensor> local, values;
  for (const Variable& v : vars) {
    local.push_back(v.value());
    values.push_back(v.value().dtype() == DType::Float64 ? v.value() : ops::cast(v.value(), DType::Float32));
  }
  std::vector<Tensor> sums = all_reduce(ReduceOp::SUM, values);
  for (size_t i = 0; i < vars.size(); ++i) {
    Variable v = vars[i];
    v.assign(sums[i].dtype() == local[i].dtype() ? sums[i] : ops::cast(sums[i], local[i].dtype()));
  }
  return local;
}

// ---------------------------------------------------------------- the strategies

MultiWorkerMirroredStrategy::MultiWorkerMirroredStrategy(MultiWorkerMirroredStrategyOptions options)
    : Strategy(std::make_shared<Impl>()) {
  const std::string name = "MultiWorkerMirroredStrategy";
#ifndef EMBER_WITH_NCCL
  EMBER_CHECK(options.communication != CommunicationImplementation::NCCL, Unimplemented)
      << name << ": communication NCCL is not available in this build (it needs the CUDA backend and NCCL); use "
      << "AUTO or RING (MPI)";
#endif
  EMBER_CHECK(!options.timeout_seconds || *options.timeout_seconds > 0, InvalidArgument)
      << name << ": timeout_seconds must be positive, got " << *options.timeout_seconds;
  EMBER_CHECK(options.bytes_per_pack >= 0, InvalidArgument)
      << name << ": bytes_per_pack must not be negative, got " << options.bytes_per_pack;
  impl_->name = name;
  impl_->timeout_seconds = options.timeout_seconds ? *options.timeout_seconds : detail::default_timeout_seconds();
  if (options.bytes_per_pack > 0) impl_->bytes_per_pack = static_cast<size_t>(options.bytes_per_pack);
  impl_->bytes_per_pack_set = options.bytes_per_pack > 0;
  impl_->overlap = options.overlap_gradients;
  impl_->comm = &Communicator::world();
  if (options.communication == CommunicationImplementation::NCCL) {
    const int gpus = device_count(DeviceType::CUDA);
    EMBER_CHECK(gpus > 0, FailedPrecondition) << name << ": communication NCCL needs a GPU, and none is visible";
    // One GPU per worker: the worker's rank among those on its machine picks it.
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    impl_->nccl_device = (local ? std::atoi(local) : impl_->comm->rank()) % gpus;
  }
}

MirroredStrategy::MirroredStrategy(MirroredStrategyOptions options) : Strategy(std::make_shared<Impl>()) {
  const std::string name = "MirroredStrategy";
  std::vector<Device> devices = options.devices;
  if (devices.empty()) {
    for (int i = 0; i < device_count(DeviceType::CUDA); ++i) devices.push_back(Device::cuda(i));
    if (devices.empty()) devices.push_back(Device::cpu());
  }
  for (const Device& d : devices)
    EMBER_CHECK(!d.is_cuda() || d.index() < device_count(DeviceType::CUDA), InvalidArgument)
        << name << ": device " << d << " is not visible: " << device_count(DeviceType::CUDA) << " GPUs are visible";
  impl_->name = name;
  impl_->devices = devices;
  impl_->replicas_in_process = static_cast<int>(devices.size());
  impl_->timeout_seconds = detail::default_timeout_seconds();
  impl_->comm = &Communicator::local();
#ifdef EMBER_WITH_NCCL
  // One GPU: the gradients go through NCCL, as in TF.
  if (devices.size() == 1 && devices[0].is_cuda()) impl_->nccl_device = devices[0].index();
#endif
}

// ---------------------------------------------------------------- scopes and contexts

StrategyScope::StrategyScope(Strategy strategy) : strategy_(std::move(strategy)) {
  t_scopes.push_back(*strategy_);
  ember::detail::t_variable_created = track_created;
}

StrategyScope::StrategyScope(StrategyScope&& other) noexcept : strategy_(std::move(other.strategy_)) {
  other.strategy_.reset();
}

StrategyScope::~StrategyScope() {
  if (!strategy_) return;
  t_scopes.pop_back();
  if (t_scopes.empty()) ember::detail::t_variable_created = nullptr;
}

std::optional<Strategy> get_strategy() {
  if (t_scopes.empty()) return std::nullopt;
  return t_scopes.back();
}

bool has_strategy() { return !t_scopes.empty(); }

std::optional<ReplicaContext> get_replica_context() {
  if (t_replicas.empty()) return std::nullopt;
  return ReplicaContext(t_replicas.back().first, t_replicas.back().second);
}

std::optional<std::vector<Tensor>> merge_gradients(const void* key, const std::vector<Tensor>& grads) {
  const std::optional<ReplicaContext> ctx = get_replica_context();
  return ctx ? ctx->merge_gradients(key, grads) : grads;
}

CrossReplicaScope::CrossReplicaScope() : saved_(std::exchange(t_replicas, {})) {}

CrossReplicaScope::~CrossReplicaScope() { t_replicas = std::move(saved_); }

std::vector<Tensor> ReplicaContext::all_reduce(ReduceOp op, const std::vector<Tensor>& values) const {
  const int n = strategy_.num_replicas_in_process();
  EMBER_CHECK(n == 1, Unimplemented)
      << strategy_.impl()->name << ": the replica context's all_reduce with " << n << " replicas in one process: "
      << "they run one after another, so none can wait for the others' values; apply the gradients with the "
      << "optimizer inside strategy.run (it applies the replicas' sum), and reduce run's results with "
      << "strategy.reduce";
  return strategy_.all_reduce(op, values);
}

std::optional<std::vector<Tensor>> ReplicaContext::merge_gradients(const void* key,
                                                                   const std::vector<Tensor>& grads) const {
  const int n = strategy_.num_replicas_in_process();
  if (n == 1) return strategy_.combine_replica_gradients(ReduceOp::SUM, {grads});
  auto& merging = strategy_.impl()->merging;
  std::vector<std::vector<Tensor>>& kept = merging[key];
  EMBER_CHECK(kept.size() == static_cast<size_t>(replica_), InvalidArgument)
      << strategy_.impl()->name << ".run: replica " << replica_ << " applied gradients with an optimizer that "
      << kept.size() << " replicas before it applied with; every replica must apply once per run, in turn";
  EMBER_CHECK(kept.empty() || kept[0].size() == grads.size(), InvalidArgument)
      << strategy_.impl()->name << ".run: replica " << replica_ << " applied " << grads.size()
      << " gradients, replica 0 " << kept[0].size() << "; every replica must apply the same variables";
  kept.push_back(grads);
  if (replica_ + 1 < n) return std::nullopt;
  const std::vector<std::vector<Tensor>> all = std::move(kept);
  merging.erase(key);
  return strategy_.combine_replica_gradients(ReduceOp::SUM, all);
}

}  // namespace ember::distribute
