// Dataset.shuffle: tf.data's buffered shuffle with a per-pass seed from a seed generator.
#include <atomic>

#include "data/node.h"
#include "framework/core/philox.h"

namespace ember::data::detail {

namespace {

// Counter high word of the stream that derives each pass's key, so it never meets a pass's own draws.
constexpr uint64_t kSeedStream = 0x73687566666c6531ull;

// Uniform indices drawn from Philox4x32-10 under one key: two 64-bit draws per block.
class IndexStream {
 public:
  explicit IndexStream(uint64_t key) : key_(key) {}
  // Uniform in [0, n), Lemire's multiply-shift (bias n / 2^64, far below any test's reach).
  uint64_t below(uint64_t n) {
    if (half_ == 0) bits_ = philox::block(key_, counter_++);
    const uint32_t* w = bits_.v + 2 * half_;
    half_ ^= 1;
    const uint64_t x = w[0] | (static_cast<uint64_t>(w[1]) << 32);
    return static_cast<uint64_t>((static_cast<unsigned __int128>(x) * n) >> 64);
  }

 private:
  uint64_t key_, counter_ = 0;
  philox::Uint4 bits_{};
  int half_ = 0;
};

class ShuffleNode : public Node {
 public:
  ShuffleNode(NodePtr input, int64_t buffer_size, uint64_t seed, bool reshuffle)
      : input_(std::move(input)), buffer_size_(buffer_size), seed_(seed), reshuffle_(reshuffle) {}
  int64_t cardinality() const override { return input_->cardinality(); }

  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    // The seed generator: pass k of this dataset (counted over all its copies, as TF's generator is
    // shared by the dataset's iterators) shuffles under key k; without reshuffling every pass uses key 0.
    const uint64_t pass = reshuffle_ ? passes_.fetch_add(1, std::memory_order_relaxed) : 0;
    const philox::Uint4 k = philox::block(seed_, pass, kSeedStream);
    const uint64_t key = k.v[0] | (static_cast<uint64_t>(k.v[1]) << 32);

    class It : public IteratorImpl {
     public:
      It(std::unique_ptr<IteratorImpl> input, int64_t buffer_size, uint64_t key)
          : input_(std::move(input)), buffer_size_(buffer_size), rng_(key) {}
      std::optional<Element> next() override {
        // Refill to buffer_size before each draw (TF reads lazily, at the start of GetNext).
        while (!input_done_ && static_cast<int64_t>(buffer_.size()) < buffer_size_) {
          std::optional<Element> e = input_->next();
          if (!e) {
            input_done_ = true;
            input_.reset();  // release the input's resources (threads) as soon as it is drained
          } else {
            buffer_.push_back(std::move(*e));
          }
        }
        if (buffer_.empty()) return std::nullopt;
        const size_t i = static_cast<size_t>(rng_.below(buffer_.size()));
        Element out = std::move(buffer_[i]);
        // Which element fills the hole does not matter: the next draw is uniform over the buffer again.
        buffer_[i] = std::move(buffer_.back());
        buffer_.pop_back();
        return out;
      }

     private:
      std::unique_ptr<IteratorImpl> input_;
      int64_t buffer_size_;
      IndexStream rng_;
      std::vector<Element> buffer_;
      bool input_done_ = false;
    };
    return std::make_unique<It>(input_->make_iterator(ctx), buffer_size_, key);
  }

 private:
  std::vector<NodePtr> inputs() const override { return {input_}; }
  NodePtr input_;
  int64_t buffer_size_;
  uint64_t seed_;
  bool reshuffle_;
  std::atomic<uint64_t>* pass_counter() const override { return &passes_; }
  mutable std::atomic<uint64_t> passes_{0};
};

}  // namespace

NodePtr make_shuffle(NodePtr input, int64_t buffer_size, uint64_t seed, bool reshuffle_each_iteration) {
  return std::make_shared<ShuffleNode>(std::move(input), buffer_size, seed, reshuffle_each_iteration);
}

}  // namespace ember::data::detail
