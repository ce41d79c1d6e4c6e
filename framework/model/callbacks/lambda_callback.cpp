#include "framework/model/callbacks/lambda_callback.h"

namespace ember::callbacks {

void LambdaCallback::on_train_begin(const Logs& logs) {
  if (fns_.on_train_begin) fns_.on_train_begin(logs);
}
void LambdaCallback::on_train_end(const Logs& logs) {
  if (fns_.on_train_end) fns_.on_train_end(logs);
}
void LambdaCallback::on_epoch_begin(int epoch, const Logs& logs) {
  if (fns_.on_epoch_begin) fns_.on_epoch_begin(epoch, logs);
}
void LambdaCallback::on_epoch_end(int epoch, Logs& logs) {
  if (fns_.on_epoch_end) fns_.on_epoch_end(epoch, logs);
}
// Keras's Callback.on_train_batch_begin/end call on_batch_begin/end, so those names act as aliases
// unless the train batch functions themselves are given.
void LambdaCallback::on_train_batch_begin(int64_t batch, const Logs& logs) {
  if (fns_.on_train_batch_begin)
    fns_.on_train_batch_begin(batch, logs);
  else if (fns_.on_batch_begin)
    fns_.on_batch_begin(batch, logs);
}
void LambdaCallback::on_train_batch_end(int64_t batch, const Logs& logs) {
  if (fns_.on_train_batch_end)
    fns_.on_train_batch_end(batch, logs);
  else if (fns_.on_batch_end)
    fns_.on_batch_end(batch, logs);
}
void LambdaCallback::on_test_begin(const Logs& logs) {
  if (fns_.on_test_begin) fns_.on_test_begin(logs);
}
void LambdaCallback::on_test_end(const Logs& logs) {
  if (fns_.on_test_end) fns_.on_test_end(logs);
}
void LambdaCallback::on_test_batch_begin(int64_t batch, const Logs& logs) {
  if (fns_.on_test_batch_begin) fns_.on_test_batch_begin(batch, logs);
}
void LambdaCallback::on_test_batch_end(int64_t batch, const Logs& logs) {
  if (fns_.on_test_batch_end) fns_.on_test_batch_end(batch, logs);
}
void LambdaCallback::on_predict_begin(const Logs& logs) {
  if (fns_.on_predict_begin) fns_.on_predict_begin(logs);
}
void LambdaCallback::on_predict_end(const Logs& logs) {
  if (fns_.on_predict_end) fns_.on_predict_end(logs);
}
void LambdaCallback::on_predict_batch_begin(int64_t batch, const Logs& logs) {
  if (fns_.on_predict_batch_begin) fns_.on_predict_batch_begin(batch, logs);
}
void LambdaCallback::on_predict_batch_end(int64_t batch, const Logs& logs) {
  if (fns_.on_predict_batch_end) fns_.on_predict_batch_end(batch, logs);
}

}  // namespace ember::callbacks
