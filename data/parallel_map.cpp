// Dataset.map with num_parallel_calls: a pool of worker threads owned by the pass. Workers take input
// elements in order (one at a time, under a lock), queue a result slot in input order, run the function
// outside any lock and fill the slot; the consumer takes the front slot (deterministic) or any finished
// one. At most 2 x workers slots exist, which bounds memory and how far the pool runs ahead. Once that
// many are queued the workers sleep until the consumer has taken half of them, as prefetch's producer
// does, and then wake one at a time: with a cheap function one wake-up buys half the queue rather than
// one element.
//
// With num_parallel_calls = AUTOTUNE the pass's ProductionTuner (autotune.h) may have the consumer map the
// elements itself: the workers then stop taking input (one that already took an element queues and
// finishes it), the consumer takes the queued results in order, and then reads and maps the input on its
// own thread.
#include <condition_variable>
#include <deque>
#include <thread>

#include "data/node.h"
#include "framework/core/profiler.h"

namespace ember::data::detail {

namespace {

class ParallelMapIterator : public IteratorImpl {
 public:
  ParallelMapIterator(std::shared_ptr<const Node> node, std::unique_ptr<IteratorImpl> input, const MapFn& fn,
                      int64_t workers, bool deterministic, bool autotune, Context ctx)
      : node_(std::move(node)), input_(std::move(input)), fn_(fn), workers_(workers), limit_(2 * workers), deterministic_(deterministic),
        autotune_(autotune), ctx_(std::move(ctx)) {
    callback_ = ctx_.cancel->add_callback([this] { wake_all(); });
    if (autotune_) ctx_.tuner->add_stage();
  }

  ~ParallelMapIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_all();
    for (std::thread& t : threads_) t.join();
    ctx_.cancel->remove_callback(callback_);
  }

  std::optional<Element> next() override {
    const bool map_here = autotune_ && ctx_.tuner->produce_inline();
    if (threads_.empty() && !map_here)  // threads start on the first request, as TF's EnsureThreadsStarted
      for (int64_t i = 0; i < workers_; ++i) threads_.emplace_back([this] { work(); });
    std::shared_ptr<Slot> slot;
    bool wake_workers;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (map_here) {
        inline_ = true;
        // A worker that took an element before the switch queues its slot; after that none takes input.
        result_cv_.wait(lock, [&] { return takers_ == 0 || ctx_.cancelled(); });
        if (ctx_.cancelled()) throw Cancelled{};
        if (results_.empty()) {
          if (input_done_) return std::nullopt;
          lock.unlock();
          return map_inline();
        }
      } else if (inline_) {
        inline_ = false;  // the workers may take input again: wake them before waiting on their results
        space_cv_.notify_all();
      }
      auto ready = [&] {
        if (ctx_.cancelled() || (results_.empty() && input_done_)) return true;
        if (deterministic_) return !results_.empty() && results_.front()->done;
        for (const auto& s : results_)
          if (s->done) return true;
        return false;
      };
      result_cv_.wait(lock, ready);
      if (ctx_.cancelled()) throw Cancelled{};
      if (results_.empty()) return std::nullopt;
      auto it = results_.begin();
      if (!deterministic_)
        while (!(*it)->done) ++it;
      slot = std::move(*it);
      results_.erase(it);
      // Half empty: wake a worker, one per take, so that a pool slower than the consumer still works in
      // parallel while a faster one sleeps between refills.
      wake_workers = !map_here && static_cast<int64_t>(results_.size()) <= limit_ / 2;
    }
    if (wake_workers) space_cv_.notify_one();
    if (slot->error) {
      // The pass ends at an error: later elements are not handed out (the owner finishes the pass).
      std::rethrow_exception(slot->error);
    }
    return std::move(slot->value);
  }

 private:
  struct Slot {
    std::optional<Element> value;
    std::exception_ptr error;
    bool done = false;
  };

  // The consumer reads and maps the next element itself (no worker takes input meanwhile).
  std::optional<Element> map_inline() {
    std::optional<Element> in = input_->next();  // an input error names its stage already, as in work()
    int64_t index = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (in) index = next_index_++;
      else input_done_ = true;
    }
    if (!in) {
      space_cv_.notify_all();  // the workers can leave
      return std::nullopt;
    }
    try {
      profiler::Trace trace("Dataset.map");
      return fn_(*in);
    } catch (const Cancelled&) {
      throw;
    } catch (...) {
      std::rethrow_exception(
          with_context(std::current_exception(), element_error_prefix("Dataset.map", "the map function", index)));
    }
  }

  // Whether a worker may queue another slot (mu_ held): below the limit while filling, and once the queue
  // was full, only after it has drained to half.
  bool has_space() const {
    const int64_t size = static_cast<int64_t>(results_.size());
    return filling_ ? size < limit_ : size <= limit_ / 2;
  }

  void wake_all() {
    { std::lock_guard<std::mutex> lock(mu_); }  // a waiter between its check and its wait sees the change
    result_cv_.notify_all();
    space_cv_.notify_all();
  }

  bool stopping() const { return stop_ || ctx_.cancelled(); }

  void work() {
    init_worker_thread();
    while (true) {
      std::shared_ptr<Slot> slot = std::make_shared<Slot>();
      std::optional<Element> in;
      int64_t index = 0;
      {
        // Reading the input and queueing the slot under input_mu_ keeps the queue in input order.
        std::unique_lock<std::mutex> input_lock(input_mu_);
        {
          std::unique_lock<std::mutex> lock(mu_);
          space_cv_.wait(lock, [&] { return stopping() || input_done_ || (!inline_ && has_space()); });
          if (stopping() || input_done_) return;
          filling_ = true;
          ++takers_;
        }
        std::exception_ptr input_error;
        try {
          in = input_->next();
        } catch (const Cancelled&) {
          return;
        } catch (...) {
          input_error = std::current_exception();  // already names the stage that failed upstream
        }
        std::lock_guard<std::mutex> lock(mu_);
        --takers_;
        if (inline_) result_cv_.notify_all();  // the consumer waits for takers_ to reach 0
        if (!in || input_error) {
          input_done_ = true;
          if (input_error) {
            slot->error = input_error;
            slot->done = true;
            results_.push_back(std::move(slot));
          }
          result_cv_.notify_all();
          space_cv_.notify_all();  // the other workers can leave
          return;
        }
        index = next_index_++;
        results_.push_back(slot);
        if (static_cast<int64_t>(results_.size()) >= limit_) filling_ = false;
      }
      try {
        profiler::Trace trace("Dataset.map");
        slot->value = fn_(*in);
      } catch (const Cancelled&) {
        return;
      } catch (...) {
        slot->error =
            with_context(std::current_exception(), element_error_prefix("Dataset.map", "the map function", index));
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        slot->done = true;
      }
      result_cv_.notify_all();
    }
  }

  std::shared_ptr<const Node> node_;     // owns fn_
  std::unique_ptr<IteratorImpl> input_;  // guarded by input_mu_ once the workers run; the consumer's while
                                         // inline_ holds and takers_ is 0
  const MapFn& fn_;
  const int64_t workers_, limit_;
  const bool deterministic_, autotune_;
  Context ctx_;
  uint64_t callback_;

  std::mutex input_mu_;
  std::mutex mu_;  // guards everything below
  std::condition_variable result_cv_, space_cv_;
  std::deque<std::shared_ptr<Slot>> results_;
  bool input_done_ = false, stop_ = false;
  bool filling_ = true;  // false from when the queue is full until it has drained to half
  bool inline_ = false;  // the consumer maps elements itself (AUTOTUNE's tuner chose it)
  int64_t takers_ = 0;   // workers between their space check and queueing their slot (they read the input)
  int64_t next_index_ = 0;
  std::vector<std::thread> threads_;  // touched only by the consumer's thread
};

class ParallelMapNode : public Node {
 public:
  ParallelMapNode(NodePtr input, MapFn fn, int64_t workers, bool deterministic, bool autotune)
      : input_(std::move(input)), fn_(std::move(fn)), workers_(workers), deterministic_(deterministic), autotune_(autotune) {}
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    return std::make_unique<ParallelMapIterator>(shared_from_this(), input_->make_iterator(ctx), fn_, workers_, deterministic_,
                                                 autotune_, ctx);
  }

 private:
  std::vector<NodePtr> inputs() const override { return {input_}; }
  NodePtr input_;
  MapFn fn_;
  int64_t workers_;
  bool deterministic_, autotune_;
};

}  // namespace

NodePtr make_parallel_map(NodePtr input, MapFn fn, int64_t workers, bool deterministic, bool autotune) {
  return std::make_shared<ParallelMapNode>(std::move(input), std::move(fn), workers, deterministic, autotune);
}

}  // namespace ember::data::detail
