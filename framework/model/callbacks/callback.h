#pragma once
// Callback (Keras: keras.callbacks.Callback): hooks fit/evaluate/predict call at the start and end of
// training, epochs and batches, with the logs (metric name -> value) of that moment. History records
// every epoch's logs; CallbackList is how the training loop drives a set of callbacks.
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace ember {
class Model;

// Metric values by name ("loss", "accuracy", "val_loss", "learning_rate", ...), as Keras's logs dict:
// in insertion order (loss, then the compiled metrics, then val_...), which the progress bar shows.
class Logs {
 public:
  using value_type = std::pair<std::string, double>;
  Logs() = default;
  Logs(std::initializer_list<value_type> items);
  // The value under key, appended (as 0) when new.
  double& operator[](const std::string& key);
  // The value under key; NotFound listing the keys there are otherwise.
  double at(const std::string& key) const;
  std::optional<double> get(const std::string& key) const;
  bool contains(const std::string& key) const;
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<value_type>::const_iterator begin() const { return items_.begin(); }
  std::vector<value_type>::const_iterator end() const { return items_.end(); }
  // The same values sorted by name (what evaluate's callers usually keep).
  operator std::map<std::string, double>() const { return {items_.begin(), items_.end()}; }
  bool operator==(const Logs&) const = default;

 private:
  std::vector<value_type> items_;
};

namespace callbacks {

// What fit/evaluate/predict tell their callbacks before starting (Keras: callback.params).
struct CallbackParams {
  int verbose = 1;
  int epochs = 1;
  int64_t steps = -1;  // batches per epoch; -1 when unknown (a dataset of unknown cardinality)
};

class Callback {
 public:
  virtual ~Callback() = default;

  // The model being trained (null outside fit/evaluate/predict).
  Model* model() const { return model_; }
  const CallbackParams& params() const { return params_; }
  virtual void set_model(Model* model) { model_ = model; }
  virtual void set_params(const CallbackParams& params) { params_ = params; }

  // Moves this object into a new shared_ptr (EMBER_CALLBACK defines it), so that a braced list of
  // temporaries can be handed to fit.
  virtual std::shared_ptr<Callback> move_to_shared() && = 0;

  // Epochs are 0-based, as in Keras; batches count from 0 within an epoch.
  virtual void on_train_begin(const Logs& /*logs*/) {}
  virtual void on_train_end(const Logs& /*logs*/) {}
  virtual void on_epoch_begin(int /*epoch*/, const Logs& /*logs*/) {}
  virtual void on_epoch_end(int /*epoch*/, Logs& /*logs*/) {}  // logs may be extended (e.g. "learning_rate")
  virtual void on_train_batch_begin(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_train_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_test_begin(const Logs& /*logs*/) {}
  virtual void on_test_end(const Logs& /*logs*/) {}
  virtual void on_test_batch_begin(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_test_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_predict_begin(const Logs& /*logs*/) {}
  virtual void on_predict_end(const Logs& /*logs*/) {}
  virtual void on_predict_batch_begin(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_predict_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {}

  // Whether the callback uses the training (test) batch hooks (Keras: _implements_train_batch_hooks,
  // _implements_test_batch_hooks). fit and evaluate call those hooks, and turn each batch's metrics into
  // logs, only when some callback does; otherwise the logs are made once per epoch. True unless a
  // callback says otherwise, as the built-in ones that override no batch hook do.
  virtual bool implements_train_batch_hooks() const { return true; }
  virtual bool implements_test_batch_hooks() const { return true; }

 private:
  Model* model_ = nullptr;
  CallbackParams params_;
};

using CallbackPtr = std::shared_ptr<Callback>;

// Put in every callback class: lets a temporary of it be moved into shared ownership.
#define EMBER_CALLBACK(ClassName)                                                          \
 public:                                                                                   \
  ::ember::callbacks::CallbackPtr move_to_shared() && override {                           \
    return std::make_shared<ClassName>(std::move(*this));                                  \
  }                                                                                        \
                                                                                           \
 public:

// An entry of fit's callback list: a temporary callback (moved in) or a shared one (the caller keeps a
// handle to read it afterwards, e.g. EarlyStopping's stopped_epoch).
struct CallbackArg {
  template <class C>
    requires std::is_base_of_v<Callback, std::remove_cvref_t<C>> && (!std::is_lvalue_reference_v<C>)
  CallbackArg(C&& callback) : ptr(std::move(callback).move_to_shared()) {}
  template <class C>
    requires std::is_base_of_v<Callback, C>
  CallbackArg(std::shared_ptr<C> callback) : ptr(std::move(callback)) {}
  CallbackPtr ptr;
};

// Keras's History: the logs of every epoch, by metric. fit returns it.
class History : public Callback {
  EMBER_CALLBACK(History)
 public:
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  bool implements_train_batch_hooks() const override { return false; }
  bool implements_test_batch_hooks() const override { return false; }
  // The epochs run (0-based, with initial_epoch counted) and, per metric, one value per epoch.
  std::vector<int> epoch;
  std::map<std::string, std::vector<double>> history;
};

// The callbacks of one fit/evaluate/predict call, driven in order (Keras: CallbackList).
class CallbackList {
 public:
  CallbackList() = default;
  explicit CallbackList(std::vector<CallbackPtr> callbacks) : callbacks_(std::move(callbacks)) {}
  void append(CallbackPtr callback) { callbacks_.push_back(std::move(callback)); }
  const std::vector<CallbackPtr>& callbacks() const { return callbacks_; }

  void set_model(Model* model);
  void set_params(const CallbackParams& params);
  void on_train_begin(const Logs& logs = {});
  void on_train_end(const Logs& logs = {});
  void on_epoch_begin(int epoch, const Logs& logs = {});
  void on_epoch_end(int epoch, Logs& logs);
  void on_train_batch_begin(int64_t batch, const Logs& logs = {});
  void on_train_batch_end(int64_t batch, const Logs& logs);
  void on_test_begin(const Logs& logs = {});
  void on_test_end(const Logs& logs);
  void on_test_batch_begin(int64_t batch, const Logs& logs = {});
  void on_test_batch_end(int64_t batch, const Logs& logs);
  void on_predict_begin(const Logs& logs = {});
  void on_predict_end(const Logs& logs = {});
  void on_predict_batch_begin(int64_t batch, const Logs& logs = {});
  void on_predict_batch_end(int64_t batch, const Logs& logs = {});
  // Whether any callback uses the training (test) batch hooks.
  bool implements_train_batch_hooks() const;
  bool implements_test_batch_hooks() const;

 private:
  std::vector<CallbackPtr> callbacks_;
};

}  // namespace callbacks

using callbacks::History;

}  // namespace ember
