// Dataset.prefetch: one background thread runs the input into a bounded buffer.
//
// AUTOTUNE starts at depth 2 and doubles the depth (up to kMaxAutotuneDepth) whenever the consumer finds
// the buffer empty although the producer's average step is no slower than the consumer's: then the
// starvation came from jitter, which a deeper buffer absorbs. When the producer is slower on average no
// depth helps, so the buffer stays small and holds no memory for nothing. Step times are exponential
// moving averages (weight 1/8) of the producer's input_->next() and of the consumer's own work: the time
// from one next() returning to the next call (its waits excluded, or a starved consumer would seem as
// slow as its producer).
//
// AUTOTUNE also lets the pass's ProductionTuner (autotune.h) have the consumer read the input itself: the
// producer then finishes the element it is making and sleeps, and the consumer takes what is buffered, in
// order, before it reads on.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>

#include "data/node.h"

namespace ember::data::detail {

namespace {

constexpr int64_t kMaxAutotuneDepth = 16;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
void update_average(double& avg, double x) { avg = avg < 0 ? x : avg + (x - avg) / 8; }

class PrefetchIterator : public IteratorImpl {
 public:
  PrefetchIterator(std::unique_ptr<IteratorImpl> input, int64_t depth, bool autotune, Context ctx)
      : input_(std::move(input)), depth_(depth), autotune_(autotune), ctx_(std::move(ctx)) {
    callback_ = ctx_.cancel->add_callback([this] { wake_all(); });
    if (autotune_) ctx_.tuner->add_stage();
  }

  ~PrefetchIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_all();
    if (thread_.joinable()) thread_.join();
    ctx_.cancel->remove_callback(callback_);
  }

  std::optional<Element> next() override {
    if (finished_) return std::nullopt;
    if (autotune_ && ctx_.tuner->produce_inline()) return next_inline();
    if (!thread_.joinable()) thread_ = std::thread([this] { produce(); });
    const Clock::time_point arrived = Clock::now();
    Item item;
    bool wake_producer;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (inline_) {  // back from inline: the producer may run again, and the consumer's step is timed afresh
        inline_ = false;
        last_return_.reset();
        space_cv_.notify_one();
      }
      if (last_return_) update_average(consumer_step_, std::chrono::duration<double>(arrived - *last_return_).count());
      if (buffer_.empty() && autotune_ && producer_step_ >= 0 && producer_step_ <= consumer_step_ &&
          depth_ < kMaxAutotuneDepth) {
        depth_ = std::min(2 * depth_, kMaxAutotuneDepth);
        space_cv_.notify_one();
      }
      item_cv_.wait(lock, [&] { return !buffer_.empty() || ctx_.cancelled(); });
      if (ctx_.cancelled()) throw Cancelled{};
      item = std::move(buffer_.front());
      buffer_.pop_front();
      wake_producer = has_space();
    }
    if (wake_producer) space_cv_.notify_one();
    last_return_ = Clock::now();
    return hand_out(std::move(item));
  }

 private:
  struct Item {
    std::optional<Element> value;  // neither value nor error: the end
    std::exception_ptr error;
  };

  std::optional<Element> hand_out(Item item) {
    if (item.error) {
      finished_ = true;
      std::rethrow_exception(item.error);
    }
    if (!item.value) finished_ = true;
    return std::move(item.value);
  }

  // The consumer reads the input itself, once the elements made before are handed out and the producer is
  // idle (it does not start another element while inline_ holds).
  std::optional<Element> next_inline() {
    {
      std::unique_lock<std::mutex> lock(mu_);
      inline_ = true;
      item_cv_.wait(lock, [&] { return !buffer_.empty() || !producing_ || ctx_.cancelled(); });
      if (ctx_.cancelled()) throw Cancelled{};
      if (!buffer_.empty()) {
        Item item = std::move(buffer_.front());
        buffer_.pop_front();
        lock.unlock();
        return hand_out(std::move(item));
      }
    }
    std::optional<Element> e = input_->next();  // an error ends the pass here as it would through the buffer
    if (!e) finished_ = true;
    return e;
  }

  // Whether the producer may add an element (mu_ held). Once the buffer is full the producer sleeps until
  // it has drained to half: one wake-up (tens of microseconds on a VM) then buys depth/2 elements made in
  // one go rather than one.
  bool has_space() const {
    const int64_t size = static_cast<int64_t>(buffer_.size());
    return filling_ ? size < depth_ : size <= depth_ / 2;
  }

  void wake_all() {
    { std::lock_guard<std::mutex> lock(mu_); }
    item_cv_.notify_all();
    space_cv_.notify_all();
  }

  void produce() {
    init_worker_thread();
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        space_cv_.wait(lock, [&] { return stop_ || ctx_.cancelled() || (!inline_ && has_space()); });
        if (stop_ || ctx_.cancelled()) return;
        filling_ = true;
        producing_ = true;
      }
      Item item;
      const Clock::time_point start = Clock::now();
      try {
        item.value = input_->next();
      } catch (const Cancelled&) {
        return;
      } catch (...) {
        item.error = std::current_exception();
      }
      const double step = seconds_since(start);
      const bool last = !item.value;  // the end or an error: nothing follows
      {
        std::lock_guard<std::mutex> lock(mu_);
        update_average(producer_step_, step);
        buffer_.push_back(std::move(item));
        producing_ = false;
        if (static_cast<int64_t>(buffer_.size()) >= depth_) filling_ = false;
      }
      item_cv_.notify_one();
      if (last) return;
    }
  }

  std::unique_ptr<IteratorImpl> input_;  // used by the producer thread, or by the consumer while it idles
  int64_t depth_;
  const bool autotune_;
  Context ctx_;
  uint64_t callback_;
  bool finished_ = false;
  std::optional<Clock::time_point> last_return_;  // the consumer's side only
  std::thread thread_;

  std::mutex mu_;  // guards what follows, and depth_
  std::condition_variable item_cv_, space_cv_;
  std::deque<Item> buffer_;
  bool stop_ = false;
  bool filling_ = true;  // false from when the buffer is full until it has drained to half
  bool inline_ = false;     // the consumer reads the input itself (AUTOTUNE's tuner chose it)
  bool producing_ = false;  // the producer is inside input_->next()
  double producer_step_ = -1, consumer_step_ = -1;  // seconds; -1 until measured
};

class PrefetchNode : public Node {
 public:
  PrefetchNode(NodePtr input, int64_t depth, bool autotune)
      : input_(std::move(input)), depth_(depth), autotune_(autotune) {}
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    return std::make_unique<PrefetchIterator>(input_->make_iterator(ctx), depth_, autotune_, ctx);
  }

 private:
  std::vector<NodePtr> inputs() const override { return {input_}; }
  NodePtr input_;
  int64_t depth_;
  bool autotune_;
};

}  // namespace

NodePtr make_prefetch(NodePtr input, int64_t depth, bool autotune) {
  return std::make_shared<PrefetchNode>(std::move(input), depth, autotune);
}

}  // namespace ember::data::detail
