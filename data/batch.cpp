// Dataset.batch, padded_batch and unbatch: stacking element components along a new axis 0, copying elements
// with copy_host_elements (bytes, or std::string assignment for string components).
#include <algorithm>
#include <cstring>

#include "data/node.h"
#include "framework/core/profiler.h"

namespace ember::data::detail {

namespace {

Tensor on_cpu(const Tensor& t) { return t.device().is_cpu() ? t : t.to(Device::cpu()); }

// Shape `inner` with `n` put in front.
Shape with_batch_dim(int64_t n, const Shape& inner) {
  Shape s{n};
  for (int64_t d : inner) s.push_back(d);
  return s;
}

void check_component_count(const std::vector<Element>& rows, const char* what) {
  for (size_t i = 1; i < rows.size(); ++i)
    EMBER_CHECK(rows[i].size() == rows[0].size(), InvalidArgument)
        << what << ": element " << i << " of the batch has " << rows[i].size() << " component(s) but element 0 has "
        << rows[0].size();
}

// Component c of every row, stacked: each row's bytes copied once into a fresh tensor.
Tensor stack_component(const std::vector<Element>& rows, size_t c) {
  const Tensor& first = rows[0][c];
  Tensor out = Tensor::empty(with_batch_dim(static_cast<int64_t>(rows.size()), first.shape()), first.dtype(),
                             Device::cpu());
  char* dst = static_cast<char*>(out.raw_data());
  const size_t row_bytes = first.nbytes(), row_elements = static_cast<size_t>(first.num_elements());
  for (size_t i = 0; i < rows.size(); ++i) {
    const Tensor& t = rows[i][c];
    EMBER_CHECK(t.shape() == first.shape() && t.dtype() == first.dtype(), InvalidArgument)
        << "Dataset.batch: component " << c << " of element " << i << " in the batch has shape " << t.shape()
        << " and dtype " << t.dtype() << " but element 0 has shape " << first.shape() << " and dtype "
        << first.dtype() << " (use padded_batch for differing shapes)";
    copy_host_elements(dst + i * row_bytes, on_cpu(t).raw_data(), row_elements, t.dtype());
  }
  return out;
}

// Copies `src` (shape s) into the leading corner of `dst` (shape d, each dimension >= s's), last-dimension
// runs at a time.
void copy_into_corner(const Tensor& src, char* dst, const Shape& d) {
  const Shape& s = src.shape();
  const DType dtype = src.dtype();
  const size_t esize = dtype_size(dtype);
  const char* from = static_cast<const char*>(src.raw_data());
  const int64_t rank = s.rank();
  if (rank == 0) {
    copy_host_elements(dst, from, 1, dtype);
    return;
  }
  if (src.num_elements() == 0) return;
  const size_t run_elements = static_cast<size_t>(s[rank - 1]), run = run_elements * esize;
  const std::vector<int64_t> dst_strides = d.strides();
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);  // index of the current run (last entry stays 0)
  const int64_t runs = src.num_elements() / s[rank - 1];
  for (int64_t r = 0; r < runs; ++r) {
    int64_t off = 0;
    for (int64_t k = 0; k < rank - 1; ++k) off += idx[static_cast<size_t>(k)] * dst_strides[static_cast<size_t>(k)];
    copy_host_elements(dst + static_cast<size_t>(off) * esize, from + static_cast<size_t>(r) * run, run_elements, dtype);
    for (int64_t k = rank - 2; k >= 0; --k) {  // odometer over all but the last dimension
      if (++idx[static_cast<size_t>(k)] < s[k]) break;
      idx[static_cast<size_t>(k)] = 0;
    }
  }
}

// Component c of every row padded to a common shape (PaddedBatchOptions rules), then stacked.
Tensor pad_and_stack_component(const std::vector<Element>& rows, size_t c, const PaddedBatchOptions& o) {
  const Tensor& first = rows[0][c];
  const int64_t rank = first.rank();
  const bool has_shape = c < o.padded_shapes.size();
  if (has_shape) {
    EMBER_CHECK(o.padded_shapes[c].rank() == rank, InvalidArgument)
        << "Dataset.padded_batch: padded_shapes[" << c << "] = " << o.padded_shapes[c] << " has rank "
        << o.padded_shapes[c].rank() << " but component " << c << " has rank " << rank << " (shape "
        << first.shape() << ")";
  }
  Shape target(std::vector<int64_t>(static_cast<size_t>(rank), 0));
  for (size_t i = 0; i < rows.size(); ++i) {
    const Tensor& t = rows[i][c];
    EMBER_CHECK(t.rank() == rank && t.dtype() == first.dtype(), InvalidArgument)
        << "Dataset.padded_batch: component " << c << " of element " << i << " has shape " << t.shape()
        << " and dtype " << t.dtype() << " but element 0 has shape " << first.shape() << " and dtype "
        << first.dtype() << " (padding needs the same rank and dtype)";
    for (int64_t k = 0; k < rank; ++k) target[k] = std::max(target[k], t.shape()[k]);
  }
  if (has_shape)
    for (int64_t k = 0; k < rank; ++k) {
      const int64_t want = o.padded_shapes[c][k];
      if (want == -1) continue;
      EMBER_CHECK(target[k] <= want, InvalidArgument)
          << "Dataset.padded_batch: component " << c << " has dimension " << k << " of size " << target[k]
          << ", larger than padded_shapes[" << c << "] = " << o.padded_shapes[c] << " allows";
      target[k] = want;
    }
  const DType dtype = first.dtype();
  Tensor out = Tensor::empty(with_batch_dim(static_cast<int64_t>(rows.size()), target), dtype, Device::cpu());
  const size_t esize = dtype_size(dtype);
  char* dst = static_cast<char*>(out.raw_data());
  if (dtype == DType::String) {
    // Strings pad with "" (TF's default for tf.string), which the fresh tensor already holds.
    EMBER_CHECK(c >= o.padding_values.size(), InvalidArgument)
        << "Dataset.padded_batch: component " << c << " is a string tensor, which pads with empty strings; "
        << "padding_values[" << c << "] = " << o.padding_values[c] << " cannot be a string (leave it out)";
  } else {
    const Tensor pad = Tensor::scalar_of(c < o.padding_values.size() ? o.padding_values[c] : 0.0, dtype, Device::cpu());
    for (int64_t i = 0; i < out.num_elements(); ++i)
      std::memcpy(dst + static_cast<size_t>(i) * esize, pad.raw_data(), esize);
  }
  const size_t row_bytes = static_cast<size_t>(target.num_elements()) * esize;
  for (size_t i = 0; i < rows.size(); ++i) copy_into_corner(on_cpu(rows[i][c]), dst + i * row_bytes, target);
  return out;
}

int64_t batched_cardinality(int64_t n, int64_t batch, bool drop_remainder) {
  if (n < 0) return n;  // infinite or unknown stays so
  return drop_remainder ? n / batch : (n + batch - 1) / batch;
}

// batch and padded_batch: collect n elements, then build the batch with `combine`.
class BatchNode : public Node {
 public:
  BatchNode(NodePtr input, int64_t n, bool drop_remainder)
      : input_(std::move(input)), n_(n), drop_remainder_(drop_remainder) {}
  BatchNode(NodePtr input, int64_t n, PaddedBatchOptions padding)
      : input_(std::move(input)), n_(n), drop_remainder_(padding.drop_remainder), padding_(std::move(padding)) {}
  int64_t cardinality() const override { return batched_cardinality(input_->cardinality(), n_, drop_remainder_); }

  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    class It : public IteratorImpl {
     public:
      It(std::shared_ptr<const BatchNode> node, std::unique_ptr<IteratorImpl> input)
          : node_(std::move(node)), input_(std::move(input)) {}
      std::optional<Element> next() override {
        profiler::Trace trace(node_->padding_ ? "Dataset.padded_batch" : "Dataset.batch");
        if (!node_->padding_ && input_ && input_->gives_rows()) {  // consecutive rows, already stacked
          std::optional<Element> out = input_->next_rows(node_->n_);
          if (!out || (node_->drop_remainder_ && out->at(0).shape()[0] < node_->n_)) {
            input_.reset();
            return std::nullopt;
          }
          return out;
        }
        std::vector<Element> rows;
        rows.reserve(static_cast<size_t>(std::min<int64_t>(node_->n_, 4096)));
        while (input_ && static_cast<int64_t>(rows.size()) < node_->n_) {
          std::optional<Element> e = input_->next();
          if (!e) {
            input_.reset();
            break;
          }
          rows.push_back(std::move(*e));
        }
        if (rows.empty() || (node_->drop_remainder_ && static_cast<int64_t>(rows.size()) < node_->n_))
          return std::nullopt;
        const char* what = node_->padding_ ? "Dataset.padded_batch" : "Dataset.batch";
        check_component_count(rows, what);
        Element out;
        for (size_t c = 0; c < rows[0].size(); ++c)
          out.push_back(node_->padding_ ? pad_and_stack_component(rows, c, *node_->padding_) : stack_component(rows, c));
        return out;
      }

     private:
      std::shared_ptr<const BatchNode> node_;
      std::unique_ptr<IteratorImpl> input_;
    };
    return std::make_unique<It>(std::static_pointer_cast<const BatchNode>(shared_from_this()),
                                input_->make_iterator(ctx));
  }

 private:
  std::vector<NodePtr> inputs() const override { return {input_}; }
  NodePtr input_;
  int64_t n_;
  bool drop_remainder_;
  std::optional<PaddedBatchOptions> padding_;
};

class UnbatchNode : public Node {
 public:
  explicit UnbatchNode(NodePtr input) : input_(std::move(input)) {}
  int64_t cardinality() const override { return UNKNOWN_CARDINALITY; }  // as TF without static shapes

  std::unique_ptr<IteratorImpl> make_iterator(const Context& ctx) const override {
    class It : public IteratorImpl {
     public:
      explicit It(std::unique_ptr<IteratorImpl> input) : input_(std::move(input)) {}
      std::optional<Element> next() override {
        while (row_ >= rows_) {
          if (!input_) return std::nullopt;
          std::optional<Element> e = input_->next();
          if (!e) {
            input_.reset();
            return std::nullopt;
          }
          for (size_t c = 0; c < e->size(); ++c) {
            const Tensor& t = (*e)[c];
            EMBER_CHECK(t.rank() >= 1, InvalidArgument)
                << "Dataset.unbatch: component " << c << " is a scalar (shape " << t.shape() << "); unbatch needs rank >= 1";
            EMBER_CHECK(t.shape()[0] == (*e)[0].shape()[0], InvalidArgument)
                << "Dataset.unbatch: component " << c << " has " << t.shape()[0] << " rows but component 0 has "
                << (*e)[0].shape()[0];
          }
          current_ = std::move(*e);
          rows_ = current_.empty() ? 0 : current_[0].shape()[0];
          row_ = 0;
        }
        Element out;
        for (const Tensor& t : current_) {
          const Tensor c = on_cpu(t);
          out.push_back(c.slice_rows(row_, row_ + 1).view(Shape(c.shape().begin() + 1, c.shape().end())));
        }
        ++row_;
        return out;
      }

     private:
      std::unique_ptr<IteratorImpl> input_;
      Element current_;
      int64_t row_ = 0, rows_ = 0;
    };
    return std::make_unique<It>(input_->make_iterator(ctx));
  }

 private:
  std::vector<NodePtr> inputs() const override { return {input_}; }
  NodePtr input_;
};

}  // namespace

NodePtr make_batch(NodePtr input, int64_t n, bool drop_remainder) {
  return std::make_shared<BatchNode>(std::move(input), n, drop_remainder);
}
NodePtr make_padded_batch(NodePtr input, int64_t n, PaddedBatchOptions options) {
  return std::make_shared<BatchNode>(std::move(input), n, std::move(options));
}
NodePtr make_unbatch(NodePtr input) { return std::make_shared<UnbatchNode>(std::move(input)); }

}  // namespace ember::data::detail
