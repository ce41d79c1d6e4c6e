// Dataset.cache: the first complete pass is kept in memory and every later pass replays it.
#include <mutex>

#include "data/node.h"

namespace ember::data::detail {

namespace {

using Elements = std::vector<Element>;

class CacheNode : public Node {
 public:
  explicit CacheNode(NodePtr input) : input_(std::move(input)) {}
  int64_t cardinality() const override { return input_->cardinality(); }

  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    std::shared_ptr<const Elements> cached = get();
    if (cached) return std::make_unique<ReplayIt>(std::move(cached));
    return std::make_unique<FillIt>(std::static_pointer_cast<const CacheNode>(shared_from_this()),
                                    input_->make_iterator(ctx));
  }

 private:
  // Replays a finished cache (elements share their tensors with it: tensors are immutable).
  class ReplayIt : public IteratorImpl {
   public:
    explicit ReplayIt(std::shared_ptr<const Elements> cache) : cache_(std::move(cache)) {}
    std::optional<Element> next() override {
      if (i_ >= cache_->size()) return std::nullopt;
      return (*cache_)[i_++];
    }

   private:
    std::shared_ptr<const Elements> cache_;
    size_t i_ = 0;
  };

  // Reads the input, recording what passes; publishes only on reaching the end, so a pass that is left
  // early or fails leaves no truncated cache behind.
  class FillIt : public IteratorImpl {
   public:
    FillIt(std::shared_ptr<const CacheNode> node, std::unique_ptr<IteratorImpl> input)
        : node_(std::move(node)), input_(std::move(input)) {}
    std::optional<Element> next() override {
      if (!input_) return std::nullopt;
      std::optional<Element> e = input_->next();
      if (e) {
        seen_.push_back(*e);
      } else {
        input_.reset();
        node_->publish(std::make_shared<const Elements>(std::move(seen_)));
      }
      return e;
    }

   private:
    std::shared_ptr<const CacheNode> node_;
    std::unique_ptr<IteratorImpl> input_;
    Elements seen_;
  };

  std::shared_ptr<const Elements> get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cache_;
  }
  // The first pass to complete wins; a concurrent pass that completes later holds the same elements.
  void publish(std::shared_ptr<const Elements> elements) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cache_) cache_ = std::move(elements);
  }

  std::vector<NodePtr> inputs() const override { return {input_}; }
  NodePtr input_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const Elements> cache_;
};

}  // namespace

NodePtr make_cache(NodePtr input) { return std::make_shared<CacheNode>(std::move(input)); }

}  // namespace ember::data::detail
