// Dataset.map without parallelism (inline in the consumer's thread) and Dataset.filter.
#include "data/node.h"
#include "framework/core/profiler.h"

namespace ember::data::detail {

namespace {

class MapNode : public Node {
 public:
  MapNode(NodePtr input, MapFn fn) : input_(std::move(input)), fn_(std::move(fn)) {}
  int64_t cardinality() const override { return input_->cardinality(); }

  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    class It : public IteratorImpl {
     public:
      It(std::shared_ptr<const MapNode> node, std::unique_ptr<IteratorImpl> input)
          : node_(std::move(node)), input_(std::move(input)) {}
      std::optional<Element> next() override {
        std::optional<Element> e = input_->next();
        if (!e) return std::nullopt;
        const int64_t index = index_++;
        try {
          profiler::Trace trace("Dataset.map");
          return node_->fn_(*e);
        } catch (...) {
          std::rethrow_exception(
              with_context(std::current_exception(), element_error_prefix("Dataset.map", "the map function", index)));
        }
      }

     private:
      std::shared_ptr<const MapNode> node_;
      std::unique_ptr<IteratorImpl> input_;
      int64_t index_ = 0;
    };
    return std::make_unique<It>(std::static_pointer_cast<const MapNode>(shared_from_this()), input_->make_iterator(ctx));
  }

 private:
  std::vector<NodePtr> inputs() const override { return {input_}; }
  NodePtr input_;
  MapFn fn_;
};

class FilterNode : public Node {
 public:
  FilterNode(NodePtr input, PredicateFn pred) : input_(std::move(input)), pred_(std::move(pred)) {}
  int64_t cardinality() const override { return UNKNOWN_CARDINALITY; }  // as TF

  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    class It : public IteratorImpl {
     public:
      It(std::shared_ptr<const FilterNode> node, std::unique_ptr<IteratorImpl> input)
          : node_(std::move(node)), input_(std::move(input)) {}
      std::optional<Element> next() override {
        while (true) {
          std::optional<Element> e = input_->next();
          if (!e) return std::nullopt;
          const int64_t index = index_++;
          bool keep;
          try {
            keep = node_->pred_(*e);
          } catch (...) {
            std::rethrow_exception(
                with_context(std::current_exception(), element_error_prefix("Dataset.filter", "the predicate", index)));
          }
          if (keep) return e;
        }
      }

     private:
      std::shared_ptr<const FilterNode> node_;
      std::unique_ptr<IteratorImpl> input_;
      int64_t index_ = 0;
    };
    return std::make_unique<It>(std::static_pointer_cast<const FilterNode>(shared_from_this()),
                                input_->make_iterator(ctx));
  }

 private:
  std::vector<NodePtr> inputs() const override { return {input_}; }
  NodePtr input_;
  PredicateFn pred_;
};

}  // namespace

NodePtr make_map(NodePtr input, MapFn fn) { return std::make_shared<MapNode>(std::move(input), std::move(fn)); }
NodePtr make_filter(NodePtr input, PredicateFn pred) {
  return std::make_shared<FilterNode>(std::move(input), std::move(pred));
}

}  // namespace ember::data::detail
