#pragma once
// Internal: the pieces every transformation is made of. A Node is one immutable stage of a pipeline
// definition; make_iterator starts one pass over it (and, recursively, its inputs). Iterators of one
// pass share a Cancellation, which tears threaded stages down promptly when the pass is abandoned.
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "data/autotune.h"
#include "data/dataset.h"

namespace ember::data::detail {

// Thrown out of a blocking wait when the pass is being torn down; never reaches the user (the pass's
// owner is already gone). Deliberately not an ember::Error, so no catch (const Error&) swallows it.
struct Cancelled {};

// The cancellation flag of one pass plus the wake-up callbacks of the stages waiting on it.
class Cancellation {
 public:
  bool cancelled() const { return flag_.load(std::memory_order_acquire); }
  // Sets the flag and runs every callback (each wakes its stage's condition variables).
  void cancel();
  // Registers a wake-up; the id removes it. remove waits for a callback that is running.
  uint64_t add_callback(std::function<void()> fn);
  void remove_callback(uint64_t id);

 private:
  std::atomic<bool> flag_{false};
  std::mutex mu_;
  std::map<uint64_t, std::function<void()>> callbacks_;
  uint64_t next_id_ = 0;
};

// What a stage's iterator needs from the pass it belongs to.
struct Context {
  std::shared_ptr<Cancellation> cancel;
  std::shared_ptr<ProductionTuner> tuner;  // AUTOTUNE stages' background-or-inline mode
  bool cancelled() const { return cancel->cancelled(); }
};

// One stage of one pass.
class IteratorImpl {
 public:
  virtual ~IteratorImpl() = default;
  // The next element or std::nullopt at the end (and on every call after it).
  virtual std::optional<Element> next() = 0;
  // Whether next_rows can give batches without making their elements one by one (from_tensor_slices on CPU
  // tensors: views of consecutive rows).
  virtual bool gives_rows() const { return false; }
  // Where gives_rows: the next n elements (fewer at the end; std::nullopt after it) stacked along a new
  // first axis, exactly as batch(n) stacks them.
  virtual std::optional<Element> next_rows(int64_t n) { return std::nullopt; }
};

// One stage of a pipeline definition; immutable and shared by every Dataset copy and pass.
class Node : public std::enable_shared_from_this<Node> {
 public:
  virtual ~Node() = default;
  virtual std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const = 0;
  virtual int64_t cardinality() const = 0;
  // The stages this one reads from, in a fixed order (Dataset::get_state walks the graph).
  virtual std::vector<std::shared_ptr<const Node>> inputs() const { return {}; }
  // A seed generator's count of passes begun (shuffle), or null: a dataset's state between passes.
  virtual std::atomic<uint64_t>* pass_counter() const { return nullptr; }
};
using NodePtr = std::shared_ptr<const Node>;

// The error `e` with `prefix` put before its message, keeping its ember::Error subclass (a non-Ember
// exception becomes ember::Error). Cancelled passes through unchanged.
std::exception_ptr with_context(std::exception_ptr e, const std::string& prefix);
// "Dataset.map: the function failed on element 7 of the pass: " and the like.
std::string element_error_prefix(const char* transformation, const char* what, int64_t index);

// Per-thread setup of a pipeline worker: the denormal flags every Ember compute thread carries, and ops
// that run on the calling thread alone.
void init_worker_thread();

// Stage factories, one per transformation (arguments already validated by Dataset).
NodePtr make_tensor_slices(std::vector<Tensor> tensors);
NodePtr make_generator(GeneratorFactory factory);
NodePtr make_range(int64_t start, int64_t stop, int64_t step);
NodePtr make_zip(std::vector<NodePtr> inputs);
NodePtr make_concatenate(NodePtr first, NodePtr second);
NodePtr make_shuffle(NodePtr input, int64_t buffer_size, uint64_t seed, bool reshuffle_each_iteration);
NodePtr make_batch(NodePtr input, int64_t n, bool drop_remainder);
NodePtr make_padded_batch(NodePtr input, int64_t n, PaddedBatchOptions options);
NodePtr make_unbatch(NodePtr input);
NodePtr make_map(NodePtr input, MapFn fn);
// autotune: workers came from AUTOTUNE, and the pass's tuner may have the reader make elements itself.
NodePtr make_parallel_map(NodePtr input, MapFn fn, int64_t workers, bool deterministic, bool autotune);
NodePtr make_filter(NodePtr input, PredicateFn pred);
NodePtr make_repeat(NodePtr input, int64_t count);
NodePtr make_take(NodePtr input, int64_t count);
NodePtr make_skip(NodePtr input, int64_t count);
NodePtr make_shard(NodePtr input, int64_t num_shards, int64_t index);
NodePtr make_cache(NodePtr input);
NodePtr make_prefetch(NodePtr input, int64_t depth, bool autotune);

}  // namespace ember::data::detail
