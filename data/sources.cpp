// Source stages: from_tensor_slices, from_generator, range, and the combinators zip and concatenate.
#include <algorithm>

#include "data/node.h"

namespace ember::data::detail {

namespace {

// Row i of t as a tensor of t's shape without axis 0 (a view: no copy).
Tensor row(const Tensor& t, int64_t i) {
  return t.slice_rows(i, i + 1).view(Shape(t.shape().begin() + 1, t.shape().end()));
}

class TensorSlicesNode : public Node {
 public:
  explicit TensorSlicesNode(std::vector<Tensor> ts)
      : ts_(std::move(ts)),
        on_cpu_(std::all_of(ts_.begin(), ts_.end(), [](const Tensor& t) { return t.device() == Device::cpu(); })) {}
  int64_t cardinality() const override { return ts_[0].shape()[0]; }

  std::unique_ptr<IteratorImpl> make_iterator(const Context&) const override {
    class It : public IteratorImpl {
     public:
      explicit It(std::shared_ptr<const TensorSlicesNode> node) : node_(std::move(node)) {}
      std::optional<Element> next() override {
        if (i_ >= node_->cardinality()) return std::nullopt;
        Element e;
        e.reserve(node_->ts_.size());
        for (const Tensor& t : node_->ts_) e.push_back(row(t, i_));
        ++i_;
        return e;
      }
      bool gives_rows() const override { return node_->on_cpu_; }
      std::optional<Element> next_rows(int64_t n) override {
        const int64_t end = std::min(node_->cardinality(), i_ + n);
        if (i_ >= end) return std::nullopt;
        Element e;
        e.reserve(node_->ts_.size());
        for (const Tensor& t : node_->ts_) e.push_back(t.slice_rows(i_, end));
        i_ = end;
        return e;
      }

     private:
      std::shared_ptr<const TensorSlicesNode> node_;
      int64_t i_ = 0;
    };
    return std::make_unique<It>(std::static_pointer_cast<const TensorSlicesNode>(shared_from_this()));
  }

 private:
  std::vector<Tensor> ts_;
  bool on_cpu_;  // batch stacks on the CPU: rows of CPU tensors are already stacked
};

class GeneratorNode : public Node {
 public:
  explicit GeneratorNode(GeneratorFactory factory) : factory_(std::move(factory)) {}
  int64_t cardinality() const override { return UNKNOWN_CARDINALITY; }

  std::unique_ptr<IteratorImpl> make_iterator(const Context&) const override {
    class It : public IteratorImpl {
     public:
      explicit It(std::shared_ptr<const GeneratorNode> node) : node_(std::move(node)) {}
      std::optional<Element> next() override {
        if (done_) return std::nullopt;
        try {
          // The factory runs on the first next(), not when the pass starts (as TF calls the generator
          // function lazily), so its errors surface at element 0.
          if (!gen_) gen_ = node_->factory_();
          std::optional<Element> e = gen_();
          if (!e) done_ = true;
          else ++index_;
          return e;
        } catch (...) {
          done_ = true;
          std::rethrow_exception(
              with_context(std::current_exception(), element_error_prefix("Dataset.from_generator", "the generator", index_)));
        }
      }

     private:
      std::shared_ptr<const GeneratorNode> node_;
      GeneratorFn gen_;
      int64_t index_ = 0;
      bool done_ = false;
    };
    return std::make_unique<It>(std::static_pointer_cast<const GeneratorNode>(shared_from_this()));
  }

 private:
  GeneratorFactory factory_;
};

class RangeNode : public Node {
 public:
  RangeNode(int64_t start, int64_t stop, int64_t step) : start_(start), stop_(stop), step_(step) {}
  int64_t cardinality() const override {
    // In 128 bits: stop - start overflows int64 for ranges spanning most of it.
    using i128 = __int128;
    if (step_ > 0) return stop_ > start_ ? static_cast<int64_t>((i128{stop_} - start_ + step_ - 1) / step_) : 0;
    return start_ > stop_ ? static_cast<int64_t>((i128{start_} - stop_ - step_ - 1) / -i128{step_}) : 0;
  }

  std::unique_ptr<IteratorImpl> make_iterator(const Context&) const override {
    class It : public IteratorImpl {
     public:
      It(int64_t next, int64_t count, int64_t step) : next_(next), left_(count), step_(step) {}
      std::optional<Element> next() override {
        if (left_ <= 0) return std::nullopt;
        --left_;
        Element e{Tensor::from_vector<int64_t>({next_}, Shape{}, Device::cpu())};
        next_ += step_;
        return e;
      }

     private:
      int64_t next_, left_, step_;
    };
    return std::make_unique<It>(start_, cardinality(), step_);
  }

 private:
  int64_t start_, stop_, step_;
};

class ZipNode : public Node {
 public:
  explicit ZipNode(std::vector<NodePtr> inputs) : inputs_(std::move(inputs)) {}
  // TF: the smallest known size; infinite only when every input is; unknown when any is.
  int64_t cardinality() const override {
    int64_t out = INFINITE_CARDINALITY;
    for (const NodePtr& in : inputs_) {
      int64_t n = in->cardinality();
      if (n == UNKNOWN_CARDINALITY) return UNKNOWN_CARDINALITY;
      if (n == INFINITE_CARDINALITY) continue;
      out = out == INFINITE_CARDINALITY ? n : std::min(out, n);
    }
    return out;
  }

  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    class It : public IteratorImpl {
     public:
      explicit It(std::vector<std::unique_ptr<IteratorImpl>> its) : its_(std::move(its)) {}
      std::optional<Element> next() override {
        if (done_) return std::nullopt;
        Element out;
        for (auto& it : its_) {
          std::optional<Element> e = it->next();
          if (!e) {
            done_ = true;
            return std::nullopt;
          }
          for (Tensor& t : *e) out.push_back(std::move(t));
        }
        return out;
      }

     private:
      std::vector<std::unique_ptr<IteratorImpl>> its_;
      bool done_ = false;
    };
    std::vector<std::unique_ptr<IteratorImpl>> its;
    for (const NodePtr& in : inputs_) its.push_back(in->make_iterator(ctx));
    return std::make_unique<It>(std::move(its));
  }

 private:
  std::vector<NodePtr> inputs() const override { return inputs_; }
  std::vector<NodePtr> inputs_;
};

class ConcatenateNode : public Node {
 public:
  ConcatenateNode(NodePtr first, NodePtr second) : first_(std::move(first)), second_(std::move(second)) {}
  int64_t cardinality() const override {
    int64_t a = first_->cardinality(), b = second_->cardinality();
    if (a == UNKNOWN_CARDINALITY || b == UNKNOWN_CARDINALITY) return UNKNOWN_CARDINALITY;
    if (a == INFINITE_CARDINALITY || b == INFINITE_CARDINALITY) return INFINITE_CARDINALITY;
    return a + b;
  }

  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    class It : public IteratorImpl {
     public:
      It(std::shared_ptr<const ConcatenateNode> node, Context ctx)
          : node_(std::move(node)), ctx_(std::move(ctx)), current_(node_->first_->make_iterator(ctx_)) {}
      std::optional<Element> next() override {
        while (current_) {
          std::optional<Element> e = current_->next();
          if (e) return e;
          // The second input starts only when the first is exhausted (its threads, if any, start late).
          current_ = on_second_ ? nullptr : node_->second_->make_iterator(ctx_);
          on_second_ = true;
        }
        return std::nullopt;
      }

     private:
      std::shared_ptr<const ConcatenateNode> node_;
      Context ctx_;
      std::unique_ptr<IteratorImpl> current_;
      bool on_second_ = false;
    };
    return std::make_unique<It>(std::static_pointer_cast<const ConcatenateNode>(shared_from_this()), ctx);
  }

 private:
  std::vector<NodePtr> inputs() const override { return {first_, second_}; }
  NodePtr first_, second_;
};

}  // namespace

NodePtr make_tensor_slices(std::vector<Tensor> tensors) { return std::make_shared<TensorSlicesNode>(std::move(tensors)); }
NodePtr make_generator(GeneratorFactory factory) { return std::make_shared<GeneratorNode>(std::move(factory)); }
NodePtr make_range(int64_t start, int64_t stop, int64_t step) { return std::make_shared<RangeNode>(start, stop, step); }
NodePtr make_zip(std::vector<NodePtr> inputs) { return std::make_shared<ZipNode>(std::move(inputs)); }
NodePtr make_concatenate(NodePtr first, NodePtr second) {
  return std::make_shared<ConcatenateNode>(std::move(first), std::move(second));
}

}  // namespace ember::data::detail
