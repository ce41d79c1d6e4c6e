// Batch sources for fit/evaluate/predict: tensors batched here, datasets, class weights, replicas' rows (Keras 3:
// keras/src/trainers/data_adapters).
#include "framework/model/batch_source.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "framework/model/callbacks/progbar_logger.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/random.h"
#include "framework/ops/reduce.h"

namespace ember::detail {
namespace {

// Tensors sliced into batches along axis 0, in a fresh random order each pass when shuffling.
class TensorSource : public BatchSource {
 public:
  TensorSource(std::vector<Tensor> tensors, int64_t batch_size, bool shuffle)
      : tensors_(std::move(tensors)), batch_size_(batch_size), shuffle_(shuffle) {
    n_ = tensors_.empty() ? 0 : tensors_[0].shape()[0];
  }
  int64_t num_batches() const override { return (n_ + batch_size_ - 1) / batch_size_; }
  void reset() override {
    pos_ = 0;
    if (shuffle_) order_ = random::permutation(n_);
  }
  std::optional<data::Element> next() override {
    if (pos_ >= n_) return std::nullopt;
    const int64_t size = std::min(batch_size_, n_ - pos_);
    data::Element batch;
    batch.reserve(tensors_.size());
    Tensor indices = shuffle_ ? ops::slice(order_, {pos_}, {size}) : Tensor();
    for (const Tensor& t : tensors_) {
      if (shuffle_) {
        batch.push_back(ops::gather(t, indices));
      } else {
        std::vector<int64_t> begin(static_cast<size_t>(t.shape().rank()), 0), sizes(begin.size(), -1);
        begin[0] = pos_;
        sizes[0] = size;
        batch.push_back(ops::slice(t, begin, sizes));
      }
    }
    pos_ += size;
    return batch;
  }

 private:
  std::vector<Tensor> tensors_;
  int64_t batch_size_;
  bool shuffle_;
  int64_t n_ = 0, pos_ = 0;
  Tensor order_;
};

// A dataset's elements as batches.
class DatasetSource : public BatchSource {
 public:
  explicit DatasetSource(data::Dataset ds) : ds_(std::move(ds)) {}
  int64_t num_batches() const override {
    const int64_t c = ds_.cardinality();
    return c >= 0 ? c : -1;
  }
  void reset() override { it_.emplace(ds_.make_iterator()); }
  std::optional<data::Element> next() override { return it_->next(); }
  std::vector<uint64_t> get_state() const override { return ds_.get_state(); }
  void set_state(const std::vector<uint64_t>& state) override { ds_.set_state(state); }

 private:
  data::Dataset ds_;
  std::optional<data::Iterator> it_;
};

// Steps through epochs of a source (Keras 3 EpochIterator): with steps_per_epoch, one pass continues

}  // namespace


int64_t first_dim(const Tensor& t) { return t.shape().rank() == 0 ? 1 : t.shape()[0]; }

// Checks that every tensor has the same number of samples (InvalidArgument naming both otherwise).
void check_samples(const std::string& who, const std::vector<Tensor>& tensors, const std::vector<std::string>& roles) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].defined() && tensors[i].shape().rank() > 0, InvalidArgument)
        << who << ": " << roles[i] << " must be a tensor with a sample axis, got "
        << (tensors[i].defined() ? tensors[i].shape().to_string() : std::string("an undefined tensor"));
    EMBER_CHECK(first_dim(tensors[i]) == first_dim(tensors[0]), InvalidArgument)
        << who << ": " << roles[0] << " has " << first_dim(tensors[0]) << " samples (shape " << tensors[0].shape()
        << ") but " << roles[i] << " has " << first_dim(tensors[i]) << " (shape " << tensors[i].shape()
        << "); give every array the same number of samples";
  }
}

std::vector<std::string> roles_of(size_t n_x, size_t n_y, bool sw) {
  std::vector<std::string> roles;
  for (size_t i = 0; i < n_x; ++i) roles.push_back(n_x == 1 ? "x" : "x[" + std::to_string(i) + "]");
  for (size_t i = 0; i < n_y; ++i) roles.push_back(n_y == 1 ? "y" : "y[" + std::to_string(i) + "]");
  if (sw) roles.push_back("sample_weight");
  return roles;
}

// Keras 3 class_weight_to_sample_weights: a weight per sample from its class (the argmax of one-hot
// targets), rounded; classes not in the map weigh 1.
Tensor class_weights_for(const Tensor& y, const std::map<int64_t, double>& class_weight) {
  Tensor labels = y;
  const int64_t rank = y.shape().rank();
  if (rank >= 2 && y.shape()[rank - 1] > 1) labels = ops::argmax(y, rank - 1);
  labels = ops::reshape(labels, {-1});
  if (is_floating(labels.dtype())) labels = ops::round(labels);
  std::vector<int64_t> ids = ops::cast(labels, DType::Int64).to_vector<int64_t>();
  std::vector<float> w(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = class_weight.find(ids[i]);
    w[i] = it == class_weight.end() ? 1.0f : static_cast<float>(it->second);
  }
  return Tensor::from_vector(w, {static_cast<int64_t>(w.size())});
}

namespace {

// A source's batches, each changed by a function (its passes and state are the source's).
class MappedSource : public BatchSource {
 public:
  MappedSource(std::unique_ptr<BatchSource> inner, std::function<data::Element(data::Element)> fn)
      : inner_(std::move(inner)), fn_(std::move(fn)) {}
  int64_t num_batches() const override { return inner_->num_batches(); }
  void reset() override { inner_->reset(); }
  std::vector<uint64_t> get_state() const override { return inner_->get_state(); }
  void set_state(const std::vector<uint64_t>& state) override { inner_->set_state(state); }
  std::optional<data::Element> next() override {
    auto batch = inner_->next();
    if (batch) batch = fn_(std::move(*batch));
    return batch;
  }

 private:
  std::unique_ptr<BatchSource> inner_;
  std::function<data::Element(data::Element)> fn_;
};

}  // namespace

std::unique_ptr<BatchSource> replica_batches(std::unique_ptr<BatchSource> source, const distribute::Strategy& strategy,
                                             std::string who) {
  if (strategy.num_replicas_in_sync() == 1) return source;
  return std::make_unique<MappedSource>(std::move(source), [strategy, who](data::Element batch) {
    return strategy.replica_batches(batch, who);
  });
}

// Each batch's sample weight comes from its class.
std::unique_ptr<BatchSource> with_class_weights(std::unique_ptr<BatchSource> source, const Model& model,
                                                std::map<int64_t, double> class_weight) {
  return std::make_unique<MappedSource>(std::move(source), [&model, class_weight](data::Element batch) {
    std::vector<Tensor> x, y;
    Tensor sw;
    model.unpack_batch(batch, x, y, sw);
    EMBER_CHECK(y.size() == 1, InvalidArgument)
        << "Model '" << model.name() << "': class_weight needs batches with targets, for a model with one output";
    EMBER_CHECK(!sw.defined(), InvalidArgument)
        << "Model '" << model.name() << "': give class_weight or sample_weight, not both";
    batch.push_back(class_weights_for(y[0], class_weight));
    return batch;
  });
}

Logs to_logs(const MetricResults& results) {
  Logs logs;
  for (const auto& [name, value] : results) {
    if (value.num_elements() == 1) {
      logs[name] = ops::cast(value, DType::Float64).item<double>();
    } else {  // e.g. Precision at several thresholds: one entry per value
      std::vector<double> v = ops::cast(ops::reshape(value, {-1}), DType::Float64).to_vector<double>();
      for (size_t i = 0; i < v.size(); ++i) logs[name + "_" + std::to_string(i)] = v[i];
    }
  }
  return logs;
}

callbacks::CallbackList make_callbacks(const std::vector<callbacks::CallbackArg>& args, int verbose,
                                       std::shared_ptr<History> history) {
  // Keras 3's order: the user's callbacks, then History, then the progress bar (unless the user gave one),
  // so values callbacks add to the epoch's logs (e.g. learning_rate) reach the bar.
  callbacks::CallbackList list;
  bool has_progbar = false;
  for (const auto& a : args) {
    has_progbar |= dynamic_cast<const callbacks::ProgbarLogger*>(a.ptr.get()) != nullptr;
    list.append(a.ptr);
  }
  if (history) list.append(std::move(history));
  if (verbose > 0 && !has_progbar) list.append(std::make_shared<callbacks::ProgbarLogger>());
  return list;
}



std::unique_ptr<BatchSource> tensor_source(const Model& model, const char* who, std::vector<Tensor> x,
                                           std::vector<Tensor> y, const Tensor& sample_weight,
                                           std::optional<int64_t> batch_size, std::optional<int64_t> steps,
                                           bool shuffle) {
  const std::string what = "Model '" + model.name() + "'." + who;
  EMBER_CHECK(x.size() == model.num_inputs(), InvalidArgument)
      << what << ": got " << x.size() << " input arrays for a model with " << model.num_inputs() << " inputs";
  EMBER_CHECK(y.empty() || y.size() == model.num_outputs(), InvalidArgument)
      << what << ": got " << y.size() << " target arrays for a model with " << model.num_outputs() << " outputs";
  EMBER_CHECK(!batch_size || *batch_size > 0, InvalidArgument)
      << what << ": batch_size must be positive, got " << *batch_size;
  EMBER_CHECK(!steps || *steps > 0, InvalidArgument) << what << ": steps must be positive, got " << *steps;
  const size_t n_x = x.size(), n_y = y.size();
  std::vector<Tensor> all = std::move(x);
  all.insert(all.end(), y.begin(), y.end());
  if (sample_weight.defined()) all.push_back(sample_weight);
  check_samples(what, all, roles_of(n_x, n_y, sample_weight.defined()));
  // Keras's ArrayDataAdapter: without a batch size, `steps` batches cover the samples, else 32 a batch.
  const int64_t n = all.empty() ? 0 : first_dim(all[0]);
  const int64_t bs = batch_size ? *batch_size : steps ? std::max<int64_t>(1, (n + *steps - 1) / *steps) : 32;
  return std::make_unique<TensorSource>(std::move(all), bs, shuffle);
}

std::unique_ptr<BatchSource> dataset_source(const Model& model, const char* who, const data::Dataset& ds,
                                            std::optional<int64_t> batch_size) {
  EMBER_CHECK(!batch_size, InvalidArgument)
      << "Model '" << model.name() << "'." << who
      << ": batch_size does not apply to a dataset (it is already batched); leave it unset and use dataset.batch(n)";
  return std::make_unique<DatasetSource>(ds);
}

// fit's validation_data as batches: a dataset as it is, tensors {x..., y..., [sample_weight]} batched.
std::unique_ptr<BatchSource> validation_source(const Model& model, const ValidationData& v,
                                               std::optional<int64_t> validation_batch_size,
                                               std::optional<int64_t> fit_batch_size,
                                               std::optional<int64_t> validation_steps) {
  // Keras batches validation tensors by validation_batch_size or else fit's batch_size; a dataset is batched
  // already, so fit's batch_size (meant for the training tensors) does not reach it.
  if (v.dataset) return dataset_source(model, "fit", *v.dataset, validation_batch_size);
  const size_t n_in = model.num_inputs(), n_out = model.num_outputs();
  EMBER_CHECK(v.tensors.size() == n_in + n_out || v.tensors.size() == n_in + n_out + 1, InvalidArgument)
      << "Model '" << model.name() << "'.fit: validation_data holds " << v.tensors.size()
      << " tensors; give {x..., y...} or {x..., y..., sample_weight} (" << n_in + n_out << " or "
      << n_in + n_out + 1 << " tensors)";
  const auto at = [&](size_t i) { return v.tensors.begin() + static_cast<std::ptrdiff_t>(i); };
  Tensor sw = v.tensors.size() == n_in + n_out + 1 ? v.tensors.back() : Tensor();
  return tensor_source(model, "fit", {at(0), at(n_in)}, {at(n_in), at(n_in + n_out)}, sw,
                       validation_batch_size ? validation_batch_size : fit_batch_size, validation_steps, false);
}

}  // namespace ember::detail
