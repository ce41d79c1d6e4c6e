// Dataset.repeat, take and skip: stages that count elements or passes.
#include <algorithm>

#include "data/node.h"

namespace ember::data::detail {

namespace {

class RepeatNode : public Node {
 public:
  RepeatNode(NodePtr input, int64_t count) : input_(std::move(input)), count_(count) {}
  // TF's rules: forever is infinite unless the input is empty; a finite count keeps unknown/infinite.
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (count_ < 0) return n == 0 ? 0 : INFINITE_CARDINALITY;
    if (count_ == 0) return 0;
    if (n < 0) return n;
    return n * count_;
  }

  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    class It : public IteratorImpl {
     public:
      It(std::shared_ptr<const RepeatNode> node, Context ctx) : node_(std::move(node)), ctx_(std::move(ctx)) {}
      std::optional<Element> next() override {
        while (!done_) {
          if (!current_) {
            if (node_->count_ >= 0 && passes_ >= node_->count_) break;
            current_ = node_->input_->make_iterator(ctx_);
            pass_empty_ = true;
          }
          std::optional<Element> e = current_->next();
          if (e) {
            pass_empty_ = false;
            return e;
          }
          current_.reset();
          ++passes_;
          // A pass that yielded nothing would yield nothing forever (TF stops the same way).
          if (pass_empty_) break;
        }
        done_ = true;
        return std::nullopt;
      }

     private:
      std::shared_ptr<const RepeatNode> node_;
      Context ctx_;
      std::unique_ptr<IteratorImpl> current_;
      int64_t passes_ = 0;
      bool pass_empty_ = true, done_ = false;
    };
    return std::make_unique<It>(std::static_pointer_cast<const RepeatNode>(shared_from_this()), ctx);
  }

 private:
  std::vector<NodePtr> inputs() const override { return {input_}; }
  NodePtr input_;
  int64_t count_;
};

class TakeNode : public Node {
 public:
  TakeNode(NodePtr input, int64_t count) : input_(std::move(input)), count_(count) {}
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n == UNKNOWN_CARDINALITY) return n;
    if (n == INFINITE_CARDINALITY) return count_;  // take(-1) of forever is forever
    return count_ < 0 ? n : std::min(n, count_);
  }

  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    class It : public IteratorImpl {
     public:
      It(std::unique_ptr<IteratorImpl> input, int64_t left) : input_(std::move(input)), left_(left) {}
      std::optional<Element> next() override {
        if (left_ == 0 || !input_) return std::nullopt;
        std::optional<Element> e = input_->next();
        if (!e) {
          input_.reset();
          return std::nullopt;
        }
        if (left_ > 0 && --left_ == 0) input_.reset();  // done: stop the input's threads now
        return e;
      }

     private:
      std::unique_ptr<IteratorImpl> input_;
      int64_t left_;  // -1: all
    };
    return std::make_unique<It>(input_->make_iterator(ctx), count_);
  }

 private:
  std::vector<NodePtr> inputs() const override { return {input_}; }
  NodePtr input_;
  int64_t count_;
};

class SkipNode : public Node {
 public:
  SkipNode(NodePtr input, int64_t count) : input_(std::move(input)), count_(count) {}
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;  // unknown or infinite (skip(-1) of forever still never ends)
    return count_ < 0 ? 0 : std::max<int64_t>(0, n - count_);
  }

  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    class It : public IteratorImpl {
     public:
      It(std::unique_ptr<IteratorImpl> input, int64_t skip) : input_(std::move(input)), skip_(skip) {}
      std::optional<Element> next() override {
        if (!input_) return std::nullopt;
        for (; skip_ != 0; skip_ = skip_ > 0 ? skip_ - 1 : skip_) {
          if (!input_->next()) {
            input_.reset();
            return std::nullopt;
          }
        }
        std::optional<Element> e = input_->next();
        if (!e) input_.reset();
        return e;
      }

     private:
      std::unique_ptr<IteratorImpl> input_;
      int64_t skip_;  // -1: everything
    };
    return std::make_unique<It>(input_->make_iterator(ctx), count_);
  }

 private:
  std::vector<NodePtr> inputs() const override { return {input_}; }
  NodePtr input_;
  int64_t count_;
};

class ShardNode : public Node {
 public:
  ShardNode(NodePtr input, int64_t num_shards, int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;  // unknown or infinite
    return n / num_shards_ + (index_ < n % num_shards_ ? 1 : 0);
  }

  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    class It : public IteratorImpl {
     public:
      It(std::unique_ptr<IteratorImpl> input, int64_t num_shards, int64_t index)
          : input_(std::move(input)), num_shards_(num_shards), skip_(index) {}
      std::optional<Element> next() override {
        // Skips to the next element of this shard: `index` elements before the first, num_shards - 1 after.
        for (; input_ && skip_ > 0; --skip_)
          if (!input_->next()) input_.reset();
        std::optional<Element> e;
        if (input_) e = input_->next();
        if (!e) {
          input_.reset();
          return std::nullopt;
        }
        skip_ = num_shards_ - 1;
        return e;
      }

     private:
      std::unique_ptr<IteratorImpl> input_;
      int64_t num_shards_;
      int64_t skip_;  // input elements to pass over before the next one kept
    };
    return std::make_unique<It>(input_->make_iterator(ctx), num_shards_, index_);
  }

 private:
  std::vector<NodePtr> inputs() const override { return {input_}; }
  NodePtr input_;
  int64_t num_shards_, index_;
};

}  // namespace

NodePtr make_repeat(NodePtr input, int64_t count) { return std::make_shared<RepeatNode>(std::move(input), count); }
NodePtr make_take(NodePtr input, int64_t count) { return std::make_shared<TakeNode>(std::move(input), count); }
NodePtr make_skip(NodePtr input, int64_t count) { return std::make_shared<SkipNode>(std::move(input), count); }
NodePtr make_shard(NodePtr input, int64_t num_shards, int64_t index) {
  return std::make_shared<ShardNode>(std::move(input), num_shards, index);
}

}  // namespace ember::data::detail
