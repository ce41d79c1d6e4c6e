// Dataset's methods (argument checks, then a new Node), the Iterator of one pass, and the shared
// helpers of node.h: cancellation and error context.
#include "data/dataset.h"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "data/node.h"
#include "framework/core/parallel.h"
#include "framework/core/profiler.h"
#include "framework/ops/random.h"

namespace ember::data {

namespace detail {

void Cancellation::cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  if (flag_.exchange(true, std::memory_order_acq_rel)) return;
  for (auto& [id, fn] : callbacks_) fn();
}

uint64_t Cancellation::add_callback(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  callbacks_.emplace(next_id_, std::move(fn));
  return next_id_++;
}

void Cancellation::remove_callback(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  callbacks_.erase(id);
}

std::exception_ptr with_context(std::exception_ptr e, const std::string& prefix) {
  try {
    std::rethrow_exception(e);
  } catch (const Cancelled&) {
    return e;
  } catch (const InvalidArgument& x) {
    return std::make_exception_ptr(InvalidArgument(prefix + x.what()));
  } catch (const NotFound& x) {
    return std::make_exception_ptr(NotFound(prefix + x.what()));
  } catch (const FailedPrecondition& x) {
    return std::make_exception_ptr(FailedPrecondition(prefix + x.what()));
  } catch (const OutOfRange& x) {
    return std::make_exception_ptr(OutOfRange(prefix + x.what()));
  } catch (const ResourceExhausted& x) {
    return std::make_exception_ptr(ResourceExhausted(prefix + x.what()));
  } catch (const Unimplemented& x) {
    return std::make_exception_ptr(Unimplemented(prefix + x.what()));
  } catch (const DataLoss& x) {
    return std::make_exception_ptr(DataLoss(prefix + x.what()));
  } catch (const Internal& x) {
    return std::make_exception_ptr(Internal(prefix + x.what()));
  } catch (const std::exception& x) {
    return std::make_exception_ptr(Error(prefix + x.what()));
  } catch (...) {
    return std::make_exception_ptr(Error(prefix + "an exception that is not a std::exception"));
  }
}

std::string element_error_prefix(const char* transformation, const char* what, int64_t index) {
  return std::string(transformation) + ": " + what + " failed on element " + std::to_string(index) +
         " (0-based, counted in this pass): ";
}

void init_worker_thread() {
  set_denormal_flags();
  // The pipeline's ops run on this thread alone (Ember's loops and oneDNN's both follow the thread's OpenMP
  // limit), as tf.data runs its functions with max_intra_op_parallelism 1 (RootDataset::Params). An OpenMP
  // team started here would add its threads to the training step's: with more OpenMP threads than CPUs,
  // libgomp's workers stop spinning between regions and every region of the step pays for a futex wake.
  omp_set_num_threads(1);
  // The input pipeline runs on the CPU (as tf.data does); fit moves each batch to the model's device.
  static thread_local DeviceScope on_cpu(Device::cpu());
}

}  // namespace detail

int64_t autotune_parallelism() {
  // The CPUs this process may run on (taskset, cgroup cpusets), as TF's NumSchedulableCPUs; libstdc++'s
  // hardware_concurrency counts every online CPU.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max<int64_t>(1, std::thread::hardware_concurrency());
}

// ---- Iterator ----

Iterator::Iterator(std::shared_ptr<const detail::Node> node, std::unique_ptr<detail::IteratorImpl> impl,
                   std::shared_ptr<detail::Cancellation> cancel, std::shared_ptr<detail::ProductionTuner> tuner)
    : node_(std::move(node)), impl_(std::move(impl)), cancel_(std::move(cancel)), tuner_(std::move(tuner)) {}

Iterator::Iterator(Iterator&&) noexcept = default;

Iterator& Iterator::operator=(Iterator&& o) noexcept {
  if (this != &o) {
    finish();
    node_ = std::move(o.node_);
    impl_ = std::move(o.impl_);
    cancel_ = std::move(o.cancel_);
    tuner_ = std::move(o.tuner_);
  }
  return *this;
}

Iterator::~Iterator() { finish(); }

void Iterator::finish() noexcept {
  if (!impl_) return;
  // Wake every stage blocked on a buffer first, so destroying the stages (which joins their threads)
  // never waits on a producer or consumer that is itself waiting.
  cancel_->cancel();
  impl_.reset();
}

std::optional<Element> Iterator::next() {
  if (!impl_) return std::nullopt;
  DeviceScope on_cpu(Device::cpu());  // stages that run in the reader's thread also stay on the CPU
  try {
    profiler::Trace trace("Iterator::GetNext");  // the whole pipeline's time to give one element
    std::optional<Element> e = impl_->next();
    if (e)
      tuner_->element_done();
    else
      finish();
    return e;
  } catch (const detail::Cancelled&) {
    finish();
    throw Internal("Dataset iterator: the pass was cancelled while its owner was still reading it");
  } catch (...) {
    finish();
    throw;
  }
}

// ---- Dataset ----

Dataset::Dataset(std::shared_ptr<const detail::Node> node)
    : node_(std::move(node)), tuning_(std::make_shared<ember::detail::TunerMemory>()) {}

Dataset Dataset::from_tensor_slices(const Tensor& t) { return from_tensor_slices(std::vector<Tensor>{t}); }

Dataset Dataset::from_tensor_slices(const std::vector<Tensor>& ts) {
  EMBER_CHECK(!ts.empty(), InvalidArgument) << "Dataset.from_tensor_slices: expected at least one tensor, got none";
  std::vector<Tensor> cpu;
  for (size_t i = 0; i < ts.size(); ++i) {
    EMBER_CHECK(ts[i].defined(), InvalidArgument)
        << "Dataset.from_tensor_slices: component " << i << " is an undefined tensor";
    EMBER_CHECK(ts[i].rank() >= 1, InvalidArgument)
        << "Dataset.from_tensor_slices: component " << i << " is a scalar (shape " << ts[i].shape()
        << "); slicing needs rank >= 1";
    EMBER_CHECK(ts[i].shape()[0] == ts[0].shape()[0], InvalidArgument)
        << "Dataset.from_tensor_slices: component " << i << " has " << ts[i].shape()[0] << " rows (shape "
        << ts[i].shape() << ") but component 0 has " << ts[0].shape()[0] << " (shape " << ts[0].shape()
        << "); all first dimensions must agree";
    cpu.push_back(ts[i].to(Device::cpu()));
  }
  return Dataset(detail::make_tensor_slices(std::move(cpu)));
}

Dataset Dataset::from_generator_factory(detail::GeneratorFactory factory) {
  EMBER_CHECK(factory != nullptr, InvalidArgument) << "Dataset.from_generator: the generator factory is empty";
  return Dataset(detail::make_generator(std::move(factory)));
}

Dataset Dataset::from_generator_shared(detail::GeneratorFn next) {
  EMBER_CHECK(next != nullptr, InvalidArgument) << "Dataset.from_generator: the generator is empty";
  // Every pass calls the one callable; the mutex keeps two concurrent passes from racing on its state.
  auto shared = std::make_shared<std::pair<std::mutex, detail::GeneratorFn>>();
  shared->second = std::move(next);
  return Dataset(detail::make_generator([shared]() -> detail::GeneratorFn {
    return [shared]() {
      std::lock_guard<std::mutex> lock(shared->first);
      return shared->second();
    };
  }));
}

Dataset Dataset::range(int64_t start, int64_t stop, int64_t step) {
  EMBER_CHECK(step != 0, InvalidArgument) << "Dataset.range: step must not be 0";
  return Dataset(detail::make_range(start, stop, step));
}

Dataset Dataset::zip(const std::vector<Dataset>& datasets) {
  EMBER_CHECK(!datasets.empty(), InvalidArgument) << "Dataset.zip: expected at least one dataset, got none";
  std::vector<detail::NodePtr> nodes;
  for (const Dataset& d : datasets) nodes.push_back(d.node_);
  return Dataset(detail::make_zip(std::move(nodes)));
}

Dataset Dataset::concatenate(const Dataset& other) const {
  return Dataset(detail::make_concatenate(node_, other.node_));
}

Dataset Dataset::shuffle(int64_t buffer_size, ShuffleOptions options) const {
  EMBER_CHECK(buffer_size >= 1, InvalidArgument)
      << "Dataset.shuffle: buffer_size must be >= 1, got " << buffer_size;
  uint64_t seed;
  if (options.seed) {
    seed = *options.seed;
  } else {
    // TF draws an unseeded shuffle's seed when the dataset is built, through get_seed: deterministic after
    // random::set_seed, fresh otherwise. Two 31-bit draws of the random ops give the same behaviour.
    std::vector<int64_t> draw = random::uniform({2}, {.minval = 0, .maxval = 2147483647, .dtype = DType::Int64, .seed = std::nullopt})
                                    .to(Device::cpu())
                                    .to_vector<int64_t>();
    seed = static_cast<uint64_t>(draw[0]) << 31 ^ static_cast<uint64_t>(draw[1]);
  }
  return Dataset(detail::make_shuffle(node_, buffer_size, seed, options.reshuffle_each_iteration));
}

Dataset Dataset::batch(int64_t n, BatchOptions options) const {
  EMBER_CHECK(n >= 1, InvalidArgument) << "Dataset.batch: batch size must be >= 1, got " << n;
  return Dataset(detail::make_batch(node_, n, options.drop_remainder));
}

Dataset Dataset::unbatch() const { return Dataset(detail::make_unbatch(node_)); }

Dataset Dataset::padded_batch(int64_t n, PaddedBatchOptions options) const {
  EMBER_CHECK(n >= 1, InvalidArgument) << "Dataset.padded_batch: batch size must be >= 1, got " << n;
  for (size_t c = 0; c < options.padded_shapes.size(); ++c)
    for (int64_t d : options.padded_shapes[c])
      EMBER_CHECK(d >= -1, InvalidArgument) << "Dataset.padded_batch: padded_shapes[" << c << "] = "
                                            << options.padded_shapes[c] << " has a dimension below -1";
  return Dataset(detail::make_padded_batch(node_, n, std::move(options)));
}

Dataset Dataset::map_impl(detail::MapFn fn, MapOptions options) const {
  const int64_t calls = options.num_parallel_calls;
  EMBER_CHECK(calls >= 0 || calls == AUTOTUNE, InvalidArgument)
      << "Dataset.map: num_parallel_calls must be >= 0 or AUTOTUNE (-1), got " << calls;
  if (calls == 0) return Dataset(detail::make_map(node_, std::move(fn)));
  const int64_t workers = calls == AUTOTUNE ? autotune_parallelism() : calls;
  return Dataset(detail::make_parallel_map(node_, std::move(fn), workers, options.deterministic, calls == AUTOTUNE));
}

Dataset Dataset::filter_impl(detail::PredicateFn pred) const {
  return Dataset(detail::make_filter(node_, std::move(pred)));
}

Dataset Dataset::repeat(int64_t count) const { return Dataset(detail::make_repeat(node_, count < 0 ? -1 : count)); }

Dataset Dataset::take(int64_t n) const { return Dataset(detail::make_take(node_, n < 0 ? -1 : n)); }

Dataset Dataset::skip(int64_t n) const { return Dataset(detail::make_skip(node_, n < 0 ? -1 : n)); }

Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  EMBER_CHECK(num_shards > 0, InvalidArgument)
      << "Dataset.shard: num_shards must be greater than zero, got " << num_shards;
  EMBER_CHECK(index >= 0 && index < num_shards, InvalidArgument)
      << "Dataset.shard: index must be in [0, " << num_shards - 1 << "] for " << num_shards << " shards, got "
      << index;
  return Dataset(detail::make_shard(node_, num_shards, index));
}

Dataset Dataset::cache() const { return Dataset(detail::make_cache(node_)); }

Dataset Dataset::prefetch(int64_t n) const {
  EMBER_CHECK(n >= 0 || n == AUTOTUNE, InvalidArgument)
      << "Dataset.prefetch: buffer size must be >= 0 or AUTOTUNE (-1), got " << n;
  if (n == 0) return *this;  // TF: a zero-sized prefetch buffer prefetches nothing
  return Dataset(detail::make_prefetch(node_, n == AUTOTUNE ? 2 : n, n == AUTOTUNE));
}

int64_t Dataset::cardinality() const { return node_->cardinality(); }

namespace {
// Every seed generator's pass counter, depth first over the inputs (a stage reached twice counts twice).
void dataset_pass_counters(const detail::Node& node, std::vector<std::atomic<uint64_t>*>& out) {
  if (std::atomic<uint64_t>* c = node.pass_counter()) out.push_back(c);
  for (const detail::NodePtr& in : node.inputs()) dataset_pass_counters(*in, out);
}
}  // namespace

std::vector<uint64_t> Dataset::get_state() const {
  std::vector<std::atomic<uint64_t>*> counters;
  dataset_pass_counters(*node_, counters);
  std::vector<uint64_t> state;
  for (auto* c : counters) state.push_back(c->load());
  return state;
}

void Dataset::set_state(const std::vector<uint64_t>& state) const {
  std::vector<std::atomic<uint64_t>*> counters;
  dataset_pass_counters(*node_, counters);
  EMBER_CHECK(state.size() == counters.size(), InvalidArgument)
      << "Dataset.set_state: the state has " << state.size() << " value(s) but this pipeline has "
      << counters.size() << " shuffle(s); it must come from get_state() of the same pipeline";
  for (size_t i = 0; i < state.size(); ++i) counters[i]->store(state[i]);
}

Iterator Dataset::make_iterator() const {
  auto cancel = std::make_shared<detail::Cancellation>();
  auto tuner = std::make_shared<detail::ProductionTuner>(tuning_);
  detail::Context ctx{cancel, tuner};
  return Iterator(node_, node_->make_iterator(ctx), std::move(cancel), std::move(tuner));
}

}  // namespace ember::data
