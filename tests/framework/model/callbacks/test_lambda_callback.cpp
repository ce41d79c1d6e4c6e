// TerminateOnNaN and LambdaCallback (Keras 3 keras/src/callbacks/), driven through their hooks.
#include <catch2/catch.hpp>
#include <limits>

#include "tests/framework/model/callbacks/callback_testing.h"

using namespace ember;
using namespace ember::callbacks;
using namespace ember::testing;

TEST_CASE("TerminateOnNaN stops training at a NaN or infinite loss", "[callbacks]") {
  auto model = small_model();
  TerminateOnNaN cb;
  cb.set_model(model.get());
  Capture out(std::cout);
  cb.on_train_batch_end(0, {{"loss", 0.5}});
  cb.on_train_batch_end(1, {{"accuracy", std::numeric_limits<double>::quiet_NaN()}});  // not the loss
  CHECK_FALSE(model->stop_training);
  CHECK(out.str().empty());
  cb.on_train_batch_end(7, {{"loss", std::numeric_limits<double>::quiet_NaN()}});
  CHECK(model->stop_training);
  CHECK(out.str() == "Batch 7: Invalid loss, terminating training\n");

  model->stop_training = false;
  cb.on_train_batch_end(2, {{"loss", -std::numeric_limits<double>::infinity()}});
  CHECK(model->stop_training);
  CHECK(out.str() == "Batch 7: Invalid loss, terminating training\nBatch 2: Invalid loss, terminating training\n");
}

TEST_CASE("TerminateOnNaN with raise_error throws at once", "[callbacks]") {
  auto model = small_model();
  TerminateOnNaN cb({.raise_error = true});
  cb.set_model(model.get());
  Capture out(std::cout);
  cb.on_train_batch_end(0, {{"loss", 0.5}});
  CHECK_THROWS_MATCHES(cb.on_train_batch_end(3, {{"loss", std::numeric_limits<double>::quiet_NaN()}}),
                       FailedPrecondition,
                       Catch::Message("TerminateOnNaN: NaN or Inf loss encountered at batch 3. Loss value: nan. "
                                      "Terminating training immediately."));
  CHECK_THROWS_WITH(cb.on_train_batch_end(4, {{"loss", -std::numeric_limits<double>::infinity()}}),
                    Catch::Contains("Loss value: -inf."));
  CHECK_FALSE(model->stop_training);
  CHECK(out.str().empty());

  // Through fit: the error leaves fit, and no later hook runs (Keras: on_train_end is bypassed).
  std::vector<std::string> calls;
  auto probe = std::make_shared<LambdaCallback>(
      LambdaCallbackOptions{.on_train_end = [&](const Logs&) { calls.push_back("train_end"); }});
  Tensor x = ops::ones({8, 3}), y = ops::full({8, 1}, std::numeric_limits<double>::infinity());
  CHECK_THROWS_AS(model->fit(x, y, {.batch_size = 4, .verbose = 0,
                                    .callbacks = {TerminateOnNaN({.raise_error = true}), probe}}),
                  FailedPrecondition);
  CHECK(calls.empty());
}

TEST_CASE("LambdaCallback calls the functions it was given", "[callbacks]") {
  std::vector<std::string> calls;
  LambdaCallback cb({
      .on_epoch_begin = [&](int epoch, const Logs&) { calls.push_back("epoch_begin " + std::to_string(epoch)); },
      .on_epoch_end =
          [&](int epoch, Logs& logs) {
            calls.push_back("epoch_end " + std::to_string(epoch));
            logs["extra"] = 2.0;
          },
      .on_train_begin = [&](const Logs&) { calls.push_back("train_begin"); },
      .on_train_end = [&](const Logs&) { calls.push_back("train_end"); },
      .on_train_batch_end =
          [&](int64_t b, const Logs& l) {
            calls.push_back("batch_end " + std::to_string(b) + " " + std::to_string(l.at("loss")));
          },
      .on_batch_begin = [&](int64_t b, const Logs&) { calls.push_back("batch_begin " + std::to_string(b)); },
      .on_batch_end = [&](int64_t, const Logs&) { calls.push_back("alias end (never: on_train_batch_end is set)"); },
      .on_test_end = [&](const Logs& l) { calls.push_back("test_end " + std::to_string(l.at("loss"))); },
      .on_predict_batch_end = [&](int64_t b, const Logs&) { calls.push_back("predict_batch " + std::to_string(b)); },
  });
  CallbackList list({std::make_shared<LambdaCallback>(std::move(cb))});
  list.on_train_begin();
  list.on_epoch_begin(0);
  list.on_train_batch_begin(0);
  list.on_train_batch_end(0, {{"loss", 0.5}});
  list.on_test_begin();
  list.on_test_end({{"loss", 0.25}});
  Logs logs{{"loss", 0.5}};
  list.on_epoch_end(0, logs);
  list.on_train_end();
  list.on_predict_batch_end(3);
  CHECK(calls == std::vector<std::string>{"train_begin", "epoch_begin 0", "batch_begin 0", "batch_end 0 0.500000",
                                          "test_end 0.250000", "epoch_end 0", "train_end", "predict_batch 3"});
  // on_epoch_end may add to the logs, as Keras's dict.
  CHECK(logs.at("extra") == 2.0);

  // With nothing set, every hook is a no-op.
  LambdaCallback empty;
  Logs l;
  empty.on_epoch_end(0, l);
  empty.on_train_batch_end(0, {});
  CHECK(l.empty());
}
