#include "framework/model/callbacks/callback.h"

#include <algorithm>

#include "framework/core/error.h"
#include "framework/model/model.h"

namespace ember {

Logs::Logs(std::initializer_list<value_type> items) {
  for (const auto& [key, value] : items) (*this)[key] = value;
}

double& Logs::operator[](const std::string& key) {
  for (auto& item : items_)
    if (item.first == key) return item.second;
  items_.emplace_back(key, 0.0);
  return items_.back().second;
}

std::optional<double> Logs::get(const std::string& key) const {
  for (const auto& item : items_)
    if (item.first == key) return item.second;
  return std::nullopt;
}

bool Logs::contains(const std::string& key) const { return get(key).has_value(); }

double Logs::at(const std::string& key) const {
  if (auto v = get(key)) return *v;
  std::string keys;
  for (const auto& item : items_) keys += (keys.empty() ? "" : ", ") + item.first;
  throw NotFound("logs have no \"" + key + "\"; they hold: " + (keys.empty() ? "nothing" : keys));
}

namespace callbacks {

void History::on_train_begin(const Logs&) { epoch.clear(); }

void History::on_epoch_end(int epoch_index, Logs& logs) {
  epoch.push_back(epoch_index);
  for (const auto& [key, value] : logs) history[key].push_back(value);
}

bool CallbackList::implements_train_batch_hooks() const {
  for (const auto& c : callbacks_)
    if (c->implements_train_batch_hooks()) return true;
  return false;
}

bool CallbackList::implements_test_batch_hooks() const {
  for (const auto& c : callbacks_)
    if (c->implements_test_batch_hooks()) return true;
  return false;
}

void CallbackList::set_model(Model* model) {
  for (auto& c : callbacks_) c->set_model(model);
}
void CallbackList::set_params(const CallbackParams& params) {
  for (auto& c : callbacks_) c->set_params(params);
}
void CallbackList::on_train_begin(const Logs& logs) {
  for (auto& c : callbacks_) c->on_train_begin(logs);
}
void CallbackList::on_train_end(const Logs& logs) {
  for (auto& c : callbacks_) c->on_train_end(logs);
}
void CallbackList::on_epoch_begin(int epoch, const Logs& logs) {
  for (auto& c : callbacks_) c->on_epoch_begin(epoch, logs);
}
void CallbackList::on_epoch_end(int epoch, Logs& logs) {
  for (auto& c : callbacks_) c->on_epoch_end(epoch, logs);
}
void CallbackList::on_train_batch_begin(int64_t batch, const Logs& logs) {
  for (auto& c : callbacks_) c->on_train_batch_begin(batch, logs);
}
void CallbackList::on_train_batch_end(int64_t batch, const Logs& logs) {
  for (auto& c : callbacks_) c->on_train_batch_end(batch, logs);
}
void CallbackList::on_test_begin(const Logs& logs) {
  for (auto& c : callbacks_) c->on_test_begin(logs);
}
void CallbackList::on_test_end(const Logs& logs) {
  for (auto& c : callbacks_) c->on_test_end(logs);
}
void CallbackList::on_test_batch_begin(int64_t batch, const Logs& logs) {
  for (auto& c : callbacks_) c->on_test_batch_begin(batch, logs);
}
void CallbackList::on_test_batch_end(int64_t batch, const Logs& logs) {
  for (auto& c : callbacks_) c->on_test_batch_end(batch, logs);
}
void CallbackList::on_predict_begin(const Logs& logs) {
  for (auto& c : callbacks_) c->on_predict_begin(logs);
}
void CallbackList::on_predict_end(const Logs& logs) {
  for (auto& c : callbacks_) c->on_predict_end(logs);
}
void CallbackList::on_predict_batch_begin(int64_t batch, const Logs& logs) {
  for (auto& c : callbacks_) c->on_predict_batch_begin(batch, logs);
}
void CallbackList::on_predict_batch_end(int64_t batch, const Logs& logs) {
  for (auto& c : callbacks_) c->on_predict_batch_end(batch, logs);
}

}  // namespace callbacks
}  // namespace ember
