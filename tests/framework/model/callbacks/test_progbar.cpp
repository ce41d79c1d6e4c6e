// Progbar and ProgbarLogger against tf-keras's Progbar: the expected strings come from
// progbar_golden.py (beside this file), which drives the real tf-keras class with the same fake clock.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/model/callbacks/callbacks.h"

using namespace ember;
using namespace ember::callbacks;

namespace {

std::string backspaces(size_t n) { return std::string(n, '\b'); }

struct Step {
  double time;
  int64_t current;
  Logs values;
  std::optional<bool> finalize;
};

// Runs the steps on a Progbar made at time 0 and returns what each update wrote.
std::vector<std::string> run(int64_t target, int verbose, bool dynamic, const std::vector<Step>& steps,
                             std::vector<std::string> stateful = {}, bool all_stateful = true) {
  double now = 0;
  std::ostringstream os;
  if (all_stateful)
    for (const Step& s : steps)
      for (const auto& [k, v] : s.values) stateful.push_back(k);
  ProgbarOptions options{.verbose = verbose, .stateful_metrics = stateful, .stream = &os, .dynamic_display = dynamic};
  options.clock = [&] { return now; };
  Progbar bar(target, std::move(options));
  std::vector<std::string> out;
  size_t written = 0;
  for (const Step& s : steps) {
    now = s.time;
    bar.update(s.current, s.values, s.finalize);
    const std::string all = os.str();
    out.push_back(all.substr(written));
    written = all.size();
  }
  return out;
}

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("Progbar redraws in place on a terminal, as tf-keras", "[callbacks][progbar]") {
  auto out = run(5, 1, true,
                 {{0.2, 1, {{"loss", 0.5}}, {}},
                  {0.21, 2, {{"loss", 0.45}}, {}},  // within the 0.05 s interval: not drawn
                  {0.4, 3, {{"loss", 0.4}, {"accuracy", 0.75}}, {}},
                  {1.0, 5, {{"loss", 0.4123}, {"accuracy", 0.8521}}, {}}});
  std::vector<std::string> expected = {
      "\r1/5 [=====>........................] - ETA: 0s - loss: 0.5000",
      "",
      backspaces(61) + "\r3/5 [=================>............] - ETA: 0s - loss: 0.4000 - accuracy: 0.7500",
      backspaces(80) + "\r5/5 [==============================] - 1s 200ms/step - loss: 0.4123 - accuracy: 0.8521\n",
  };
  CHECK(out == expected);
}

TEST_CASE("Progbar writes only the finished line when not on a terminal", "[callbacks][progbar]") {
  auto out = run(5, 1, false,
                 {{0.2, 1, {{"loss", 0.5}}, {}},
                  {0.4, 3, {{"loss", 0.4}, {"accuracy", 0.75}}, {}},
                  {1.0, 5, {{"loss", 0.4123}, {"accuracy", 0.8521}, {"val_loss", 0.5}}, {}}});
  std::vector<std::string> expected = {
      "",
      "",
      "5/5 [==============================] - 1s 200ms/step - loss: 0.4123 - accuracy: 0.8521 - val_loss: 0.5000\n",
  };
  CHECK(out == expected);
}

TEST_CASE("Progbar pads the step count, shows the ETA and blanks a longer previous bar", "[callbacks][progbar]") {
  auto out = run(469, 1, true,
                 {{0.5, 1, {{"loss", 2.3}}, {}},
                  {0.6, 12, {{"loss", 0.4}}, {}},
                  {3.0, 469, {{"loss", 0.4123}, {"accuracy", 0.8521}}, {}}});
  std::vector<std::string> expected = {
      "\r  1/469 [..............................] - ETA: 3:54 - loss: 2.3000",
      backspaces(67) + "\r 12/469 [..............................] - ETA: 4s - loss: 0.4000  ",
      backspaces(65) + "\r469/469 [==============================] - 3s 5ms/step - loss: 0.4123 - accuracy: 0.8521\n",
  };
  CHECK(out == expected);
}

TEST_CASE("Progbar with an unknown target counts steps", "[callbacks][progbar]") {
  auto out =
      run(-1, 1, true, {{0.1, 1, {{"loss", 1.0}}, {}}, {0.3, 2, {{"loss", 0.9}}, {}}, {0.5, 3, {{"loss", 0.8}}, true}});
  std::vector<std::string> expected = {
      "\r      1/Unknown - 0s 100ms/step - loss: 1.0000",
      backspaces(46) + "\r      2/Unknown - 0s 200ms/step - loss: 0.9000",
      backspaces(46) + "\r      3/Unknown - 0s 200ms/step - loss: 0.8000\n",
  };
  CHECK(out == expected);
}

TEST_CASE("Progbar formats values as %.4f above 1e-3 and %.4e otherwise, times in us", "[callbacks][progbar]") {
  auto out =
      run(4, 1, true,
          {{0.001,
            1,
            {{"a", 0.0005}, {"b", -0.5}, {"c", 1234.5678}, {"d", 0.001}, {"e", kNan}, {"f", -kInf}, {"g", -0.0002}},
            {}},
           {0.0015, 4, {}, {}}});
  std::vector<std::string> expected = {
      "\r1/4 [======>.......................] - ETA: 0s - a: 5.0000e-04 - b: -0.5000 - c: 1234.5678 - d: 1.0000e-03 "
      "- e: nan - f: -inf - g: -2.0000e-04",
      backspaces(142) +
          "\r4/4 [==============================] - 0s 167us/step - a: 5.0000e-04 - b: -0.5000 - c: 1234.5678 - d: "
          "1.0000e-03 - e: nan - f: -inf - g: -2.0000e-04\n",
  };
  CHECK(out == expected);
  // Long numbers are written whole.
  auto big = run(1, 1, false, {{1.0, 1, {{"x", 1e300}}, {}}});
  CHECK(big[0].size() == std::string("1/1 [==============================] - 1s 1s/step - x: ").size() + 301 + 5 + 1);
  // A negative NaN still prints as Python's "nan".
  auto neg = run(1, 1, false, {{1.0, 1, {{"x", -kNan}}, {}}});
  CHECK(neg[0] == "1/1 [==============================] - 1s 1s/step - x: nan\n");
}

TEST_CASE("Progbar averages metrics that are not stateful, weighted by steps", "[callbacks][progbar]") {
  auto out =
      run(4, 1, true, {{1.0, 1, {{"loss", 1.0}}, {}}, {2.0, 3, {{"loss", 0.5}}, {}}, {3.0, 4, {{"loss", 0.25}}, {}}},
          {}, false);
  std::vector<std::string> expected = {
      "\r1/4 [======>.......................] - ETA: 3s - loss: 1.0000",
      backspaces(61) + "\r3/4 [=====================>........] - ETA: 0s - loss: 0.6667",
      backspaces(61) + "\r4/4 [==============================] - 3s 667ms/step - loss: 0.5625\n",
  };
  CHECK(out == expected);
}

TEST_CASE("Progbar ETA in minutes and hours; the first step is left out of the step time", "[callbacks][progbar]") {
  auto out =
      run(100000, 1, true, {{0.5, 1, {}, {}}, {1.5, 2, {}, {}}, {301.5, 1000, {}, {}}, {50000.0, 100000, {}, {}}});
  std::vector<std::string> expected = {
      "\r     1/100000 [..............................] - ETA: 13:53:19",
      backspaces(62) + "\r     2/100000 [..............................] - ETA: 27:46:38",
      backspaces(62) + "\r  1000/100000 [..............................] - ETA: 8:17:08 ",
      backspaces(61) + "\r100000/100000 [==============================] - 50000s 500ms/step\n",
  };
  CHECK(out == expected);
}

TEST_CASE("Progbar verbose 2 prints one line with the epoch and step times", "[callbacks][progbar]") {
  auto out =
      run(10, 2, true,
          {{0.5, 3, {{"loss", 0.7}}, {}}, {2.0, 10, {{"loss", 0.5}, {"accuracy", -0.25}, {"val_loss", 0.0005}}, {}}});
  std::vector<std::string> expected = {
      "",
      "10/10 - 2s - loss: 0.5000 - accuracy: -2.5000e-01 - val_loss: 5.0000e-04 - 2s/epoch - 200ms/step\n",
  };
  CHECK(out == expected);
}

TEST_CASE("Progbar add, time formatting and bad options", "[callbacks][progbar]") {
  double now = 0;
  std::ostringstream os;
  Progbar bar(4, {.stream = &os, .dynamic_display = false, .clock = [&] { return now; }});
  now = 1;
  bar.add(2);
  now = 2;
  bar.add(2, {{"loss", 0.25}});
  // Step 1 was never shown, so the step time is the plain average; loss is averaged over 2 steps.
  CHECK(os.str() == "4/4 [==============================] - 2s 500ms/step - loss: 0.2500\n");

  CHECK(format_time_per_unit(0, "step") == " 0s/step");
  CHECK(format_time_per_unit(2.5, "epoch") == " 2s/epoch");  // Python rounds half to even
  CHECK(format_time_per_unit(0.006, "step") == " 6ms/step");
  CHECK(format_time_per_unit(0.00012, "sample") == " 120us/sample");

  CHECK_THROWS_AS(Progbar(0), InvalidArgument);
  CHECK_THROWS_WITH(Progbar(5, {.verbose = 3}), Catch::Contains("verbose must be 0, 1 or 2; got 3"));
  CHECK_THROWS_WITH(Progbar(5, {.width = 0}), Catch::Contains("width must be positive"));
  // A std::ostringstream is never a terminal.
  CHECK_FALSE(Progbar(5, {.stream = &os}).dynamic_display());
}

TEST_CASE("ProgbarLogger prints Epoch lines and one bar per epoch", "[callbacks][progbar]") {
  double now = 0;
  std::ostringstream os;
  ProgbarLogger logger({.stream = &os, .dynamic_display = false, .clock = [&] { return now; }});
  CallbackList list({std::make_shared<ProgbarLogger>(std::move(logger))});
  list.set_params({.verbose = 1, .epochs = 2, .steps = 3});
  list.on_train_begin();
  for (int epoch = 0; epoch < 2; ++epoch) {
    now = 0;
    list.on_epoch_begin(epoch);
    for (int64_t b = 0; b < 3; ++b) {
      now += 0.01;
      list.on_train_batch_end(b, {{"loss", 0.5 - 0.1 * epoch}, {"accuracy", 0.25}});
    }
    // Validation inside fit draws nothing.
    list.on_test_begin();
    list.on_test_batch_end(0, {{"loss", 9.0}});
    list.on_test_end({{"loss", 9.0}});
    Logs logs{{"loss", 0.5 - 0.1 * epoch}, {"accuracy", 0.25}, {"val_loss", 0.0004}};
    list.on_epoch_end(epoch, logs);
  }
  list.on_train_end();
  CHECK(
      os.str() ==
      "Epoch 1/2\n"
      "3/3 [==============================] - 0s 10ms/step - loss: 0.5000 - accuracy: 0.2500 - val_loss: 4.0000e-04\n"
      "Epoch 2/2\n"
      "3/3 [==============================] - 0s 10ms/step - loss: 0.4000 - accuracy: 0.2500 - val_loss: 4.0000e-04\n");
}

TEST_CASE("ProgbarLogger learns an unknown epoch length and shows evaluate and predict bars", "[callbacks][progbar]") {
  double now = 0;
  std::ostringstream os;
  auto logger = std::make_shared<ProgbarLogger>(
      ProgbarLoggerOptions{.stream = &os, .dynamic_display = false, .clock = [&] { return now; }});
  CallbackList list({logger});
  list.set_params({.verbose = 1, .epochs = 1, .steps = -1});
  list.on_train_begin();
  list.on_epoch_begin(0);
  for (int64_t b = 0; b < 2; ++b) {
    now += 0.5;
    list.on_train_batch_end(b, {{"loss", 1.0}});
  }
  Logs logs{{"loss", 1.0}};
  list.on_epoch_end(0, logs);
  list.on_train_end();
  // One epoch: no "Epoch 1/1" line (as Keras); the length seen becomes the target.
  CHECK(os.str() == "2/2 [==============================] - 1s 500ms/step - loss: 1.0000\n");

  // evaluate on its own: a bar over its steps.
  os.str("");
  now = 0;
  list.set_params({.verbose = 1, .epochs = 1, .steps = 4});
  list.on_test_begin();
  for (int64_t b = 0; b < 4; ++b) {
    now += 0.25;
    list.on_test_batch_end(b, {{"loss", 0.125}});
  }
  list.on_test_end({{"loss", 0.125}});
  CHECK(os.str() == "4/4 [==============================] - 1s 250ms/step - loss: 0.1250\n");

  // predict: no values.
  os.str("");
  now = 0;
  list.set_params({.verbose = 1, .epochs = 1, .steps = 2});
  list.on_predict_begin();
  for (int64_t b = 0; b < 2; ++b) {
    now += 0.002;
    list.on_predict_batch_end(b, {{"ignored", 1.0}});
  }
  list.on_predict_end();
  CHECK(os.str() == "2/2 [==============================] - 0s 2ms/step\n");
}

TEST_CASE("ProgbarLogger verbose 2 prints one line per epoch", "[callbacks][progbar]") {
  double now = 0;
  std::ostringstream os;
  auto logger = std::make_shared<ProgbarLogger>(
      ProgbarLoggerOptions{.stream = &os, .dynamic_display = true, .clock = [&] { return now; }});
  CallbackList list({logger});
  list.set_params({.verbose = 2, .epochs = 3, .steps = 10});
  list.on_train_begin();
  list.on_epoch_begin(0);
  for (int64_t b = 0; b < 10; ++b) {
    now += 0.2;
    list.on_train_batch_end(b, {{"loss", 0.5}});
  }
  Logs logs{{"loss", 0.5}, {"val_loss", 0.75}};
  list.on_epoch_end(0, logs);
  CHECK(os.str() == "Epoch 1/3\n10/10 - 2s - loss: 0.5000 - val_loss: 0.7500 - 2s/epoch - 200ms/step\n");
}
