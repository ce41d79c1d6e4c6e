// The Optimizer base: names and order of variables, iteration counting, the learning rate, gradient
// filtering, errors as Keras raises them, weight-decay exclusion, EMA, configs and optimizers::get.
#include <catch2/catch.hpp>

#include "framework/ember.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using namespace ember::testing;
using namespace ember::optimizers;
using nlohmann::json;

namespace {

Variable var(const std::string& name, std::vector<double> values, DType dtype = DType::Float32) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Variable(make(values, Shape{n}, dtype), {.name = name});
}
Tensor t(std::vector<double> values, DType dtype = DType::Float32) {
  const int64_t n = static_cast<int64_t>(values.size());
  return make(values, Shape{n}, dtype);
}
std::vector<std::string> names(const std::vector<Variable>& vars) {
  std::vector<std::string> out;
  for (const Variable& v : vars) out.push_back(v.name());
  return out;
}
int64_t iterations(const Optimizer& opt) { return opt.iterations().value().item<int64_t>(); }

}  // namespace

TEST_CASE("optimizers: the API spelling and automatic names", "[optimizers]") {
  backend::clear_session();
  Adam a({.learning_rate = 1e-3});
  Adam b;
  SGD s({.learning_rate = 0.1, .momentum = 0.9, .nesterov = true});
  RMSprop r;
  AdamW w({.learning_rate = 1e-3, .weight_decay = 0.01, .beta_1 = 0.8});
  CHECK(a.name() == "adam");
  CHECK(b.name() == "adam_1");
  CHECK(s.name() == "sgd");
  CHECK(r.name() == "rm_sprop");  // Keras's snake_case of RMSprop
  CHECK(w.name() == "adam_w");
  CHECK(Adam({.name = "mine"}).name() == "mine");
  CHECK(a.class_name() == "Adam");
  CHECK(w.class_name() == "AdamW");
  OptimizerPtr moved = std::move(s).move_to_shared();
  CHECK(moved->class_name() == "SGD");
  CHECK(moved->name() == "sgd");
  CHECK(moved->get_config()["nesterov"] == true);
}

TEST_CASE("optimizers: variables in Keras 3 order with Keras names", "[optimizers]") {
  Variable k = var("dense/kernel", {1, 2}), bias = var("dense/bias", {3});
  Adam adam({.name = "adam"});
  CHECK(names(adam.variables()) == std::vector<std::string>{"adam/iteration", "adam/learning_rate"});
  adam.build({k, bias});
  CHECK(names(adam.variables()) ==
        std::vector<std::string>{"adam/iteration", "adam/learning_rate", "adam/dense_kernel_momentum",
                                 "adam/dense_kernel_velocity", "adam/dense_bias_momentum", "adam/dense_bias_velocity"});
  CHECK(adam.iterations().dtype() == DType::Int64);
  CHECK(adam.iterations().shape() == Shape{});
  CHECK_FALSE(adam.iterations().trainable());
  CHECK(adam.variables()[1].dtype() == DType::Float32);
  for (const Variable& v : adam.variables()) CHECK_FALSE(v.trainable());

  // EMA averages come before the subclass's slots; a schedule has no learning_rate variable.
  RMSprop rms({.learning_rate = schedules::ExponentialDecay({.initial_learning_rate = 0.1, .decay_steps = 2,
                                                             .decay_rate = 0.5}),
               .momentum = 0.5, .centered = true, .use_ema = true, .name = "r"});
  rms.build({k, bias});
  CHECK(names(rms.variables()) ==
        std::vector<std::string>{"r/iteration", "r/dense_kernel_average", "r/dense_bias_average",
                                 "r/dense_kernel_velocity", "r/dense_bias_velocity", "r/dense_kernel_momentum",
                                 "r/dense_bias_momentum", "r/dense_kernel_average_gradient",
                                 "r/dense_bias_average_gradient"});
  // Adagrad's accumulator starts at initial_accumulator_value; SGD without momentum has no slot.
  Adagrad ada({.initial_accumulator_value = 0.25, .name = "g"});
  ada.build({k});
  check_tensor(ada.variables().back().value(), DType::Float32, Shape{2}, {0.25, 0.25});
  // In float64 too the value is float32's (Keras casts the Python float through a float32 tensor).
  Adagrad ada64({.name = "g64"});
  ada64.build({Variable(ops::zeros({2}, DType::Float64), {.name = "w64"})});
  CHECK(ada64.variables().back().value().to_vector<double>() ==
        std::vector<double>(2, static_cast<double>(0.1f)));
  SGD sgd({.name = "s"});
  sgd.build({k});
  CHECK(sgd.variables().size() == 2);
  // build runs once.
  adam.build({k});
  CHECK(adam.variables().size() == 6);
}

TEST_CASE("optimizers: iterations count applies; skipped gradients leave their slots alone", "[optimizers]") {
  Variable a = var("a", {1, 2}), b = var("b", {3});
  Adam opt;
  CHECK(iterations(opt) == 0);
  opt.apply({}, {});  // Keras: an empty list is a no-op
  CHECK(iterations(opt) == 0);
  CHECK_FALSE(opt.built());
  opt.apply({t({0.1, 0.2}), t({0.3})}, {a, b});
  CHECK(opt.built());
  CHECK(iterations(opt) == 1);
  const std::vector<double> b_before = values_as_double(b.value());
  const std::vector<double> b_momentum = values_as_double(opt.variables()[4].value());
  opt.apply({t({0.1, 0.2}), Tensor()}, {a, b});  // no gradient for b, as Keras's None
  CHECK(iterations(opt) == 2);
  CHECK(values_as_double(b.value()) == b_before);
  CHECK(values_as_double(opt.variables()[4].value()) == b_momentum);
  // The pair form and gradients-only form after build.
  opt.apply_gradients({{t({0.1, 0.2}), a}, {t({0.1}), b}});
  opt.apply({t({0.1, 0.2}), t({0.1})});
  CHECK(iterations(opt) == 4);
}

TEST_CASE("optimizers: variables passed in another order or as a subset find their slots", "[optimizers]") {
  Variable a1 = var("a", {1, 2}), b1 = var("b", {3});
  Variable a2 = var("a", {1, 2}), b2 = var("b", {3});
  Adam x({.learning_rate = 0.1}), y({.learning_rate = 0.1});
  x.apply({t({0.5, -0.5}), t({1.0})}, {a1, b1});
  y.apply({t({1.0}), t({0.5, -0.5})}, {b2, a2});
  check_tensor(a2.value(), DType::Float32, Shape{2}, values_as_double(a1.value()), 0, 0);
  check_tensor(b2.value(), DType::Float32, Shape{1}, values_as_double(b1.value()), 0, 0);
  x.apply({t({1.0})}, {b1});
  y.apply({t({1.0})}, {b2});
  check_tensor(b2.value(), DType::Float32, Shape{1}, values_as_double(b1.value()), 0, 0);
}

TEST_CASE("optimizers: variables made from one tensor stay separate", "[optimizers]") {
  Tensor shared = t({1, 1});
  Variable a(shared, {.name = "a"}), b(shared, {.name = "b"});
  SGD opt({.learning_rate = 1.0});
  opt.apply({t({1, 1}), t({2, 2})}, {a, b});
  check_tensor(a.value(), DType::Float32, Shape{2}, {0, 0});
  check_tensor(b.value(), DType::Float32, Shape{2}, {-1, -1});
  check_tensor(shared, DType::Float32, Shape{2}, {1, 1});
  SGD twice;
  CHECK_THROWS_WITH(twice.apply({t({1, 1}), t({1, 1})}, {a, a}), Catch::Contains("'a' is listed twice"));
}

TEST_CASE("optimizers: Adam updates in place only buffers nothing else holds", "[optimizers]") {
  // Two runs from the same values: one where every buffer is the variable's own (updated in place), one
  // where the caller keeps the variables' first values (copy on write: those tensors must not change).
  Variable a = var("a", {1, -2, 3}), b = var("b", {0.5});
  Variable a2 = var("a", {1, -2, 3}), b2 = var("b", {0.5});
  Adam in_place({.learning_rate = 0.1}), copying({.learning_rate = 0.1});
  const std::vector<Tensor> g1 = {t({0.3, -0.1, 0.2}), t({-1})}, g2 = {t({0.1, 0.4, -0.2}), t({2})};
  in_place.apply(g1, {a, b});  // the first step builds the slots
  const void* a_buffer = a.value().raw_data();
  in_place.apply(g2, {a, b});
  CHECK(a.value().raw_data() == a_buffer);

  copying.apply(g1, {a2, b2});
  const Tensor kept = a2.value();
  const std::vector<double> kept_values = values_as_double(kept);
  copying.apply(g2, {a2, b2});
  CHECK(values_as_double(kept) == kept_values);
  CHECK(a2.value().raw_data() != kept.raw_data());
  check_tensor(a2.value(), DType::Float32, Shape{3}, values_as_double(a.value()), 0, 0);
  check_tensor(b2.value(), DType::Float32, Shape{1}, values_as_double(b.value()), 0, 0);
  check_tensor(copying.variables()[2].value(), DType::Float32, Shape{3},
               values_as_double(in_place.variables()[2].value()), 0, 0);

  // Variables made from one tensor share a buffer until their first update.
  Tensor shared = t({1, 1});
  Variable c(shared, {.name = "c"}), d(shared, {.name = "d"});
  Adam opt({.learning_rate = 1.0});
  opt.apply({t({1, 1}), t({-1, -1})}, {c, d});
  check_tensor(shared, DType::Float32, Shape{2}, {1, 1});
  check_tensor(c.value(), DType::Float32, Shape{2}, {0, 0}, 1e-5, 1e-5);
  check_tensor(d.value(), DType::Float32, Shape{2}, {2, 2}, 1e-5);
}

TEST_CASE("optimizers: the learning rate", "[optimizers]") {
  Variable a = var("a", {1});
  SGD sgd;
  CHECK(sgd.learning_rate() == static_cast<double>(0.01f));
  sgd.set_learning_rate(0.5);
  CHECK(sgd.learning_rate() == 0.5);
  CHECK(sgd.get_config()["learning_rate"] == 0.5);
  sgd.apply({t({1})}, {a});
  check_tensor(a.value(), DType::Float32, Shape{1}, {0.5}, 0, 0);

  // A schedule is evaluated at the iteration count before the update, and cannot be set.
  SGD sched({.learning_rate = schedules::PiecewiseConstantDecay({.boundaries = {0}, .values = {1.0, 0.25}})});
  CHECK(sched.learning_rate() == 1.0);
  Variable b = var("b", {0});
  sched.apply({t({1})}, {b});
  check_tensor(b.value(), DType::Float32, Shape{1}, {-1.0}, 0, 0);
  CHECK(sched.learning_rate() == 0.25);
  CHECK_THROWS_AS(sched.set_learning_rate(0.1), FailedPrecondition);
  REQUIRE(sched.learning_rate_schedule() != nullptr);
  CHECK(sched.learning_rate_schedule()->class_name() == "PiecewiseConstantDecay");
}

TEST_CASE("optimizers: errors before any update", "[optimizers][errors]") {
  Variable a = var("a", {1, 2}), b = var("b", {3});
  Adam opt({.name = "opt"});
  CHECK_THROWS_WITH(opt.apply({t({1, 1})}, {a, b}), Catch::Contains("got 1 gradients for 2 variables"));
  CHECK_THROWS_WITH(opt.apply({t({1, 1}), t({1, 2})}, {a, b}),
                    Catch::Contains("gradient for variable 'b' has shape (2,)") && Catch::Contains("(1,)"));
  CHECK(iterations(opt) == 0);
  check_tensor(a.value(), DType::Float32, Shape{2}, {1, 2}, 0, 0);
  CHECK_THROWS_WITH(opt.apply({Tensor(), Tensor()}, {a, b}), Catch::Contains("No gradients provided for any variable"));
  CHECK_THROWS_AS(opt.apply({t({1, 1}), Tensor::scalar<int64_t>(1).view(Shape{1})}, {a, b}), InvalidArgument);
  Variable stranger = var("stranger", {1, 2});
  CHECK_THROWS_WITH(opt.apply({t({1, 1})}, {stranger}), Catch::Contains("Unknown variable: 'stranger'"));
  CHECK_THROWS_WITH(opt.apply({t({1, 1})}), Catch::Contains("received a list of 1 gradients") &&
                                                Catch::Contains("tracking 2 trainable variables"));
  CHECK(iterations(opt) == 0);

  Adam unbuilt;
  CHECK_THROWS_AS(unbuilt.apply({t({1, 1})}), FailedPrecondition);
  CHECK_THROWS_AS(unbuilt.set_weights({}), FailedPrecondition);
  opt.apply({t({1, 1}), t({1})}, {a, b});
  CHECK_THROWS_WITH(opt.set_weights({t({1})}), Catch::Contains("got 1 values for 6 variables"));
}

TEST_CASE("optimizers: hyperparameter errors as Keras raises them", "[optimizers][errors]") {
  CHECK_THROWS_WITH(SGD({.momentum = 1.5}), Catch::Contains("`momentum` must be a float between [0, 1]"));
  CHECK_THROWS_AS(SGD({.momentum = -0.1}), InvalidArgument);
  CHECK_THROWS_WITH(Lion({.beta_1 = 0.0}), Catch::Contains("`beta_1` must be in the [0, 1] range"));
  CHECK_THROWS_AS(Lion({.beta_1 = 1.5}), InvalidArgument);
  CHECK_NOTHROW(Lion({.beta_1 = 1.0}));
  CHECK_THROWS_WITH(AdamW({.weight_decay = std::nullopt}), Catch::Contains("`weight_decay` must be a float"));
  CHECK_THROWS_WITH(Adam({.clipnorm = 1.0, .global_clipnorm = 1.0}),
                    Catch::Contains("Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set"));
  CHECK_THROWS_AS(SGD({.clipnorm = 1.0, .clipvalue = 1.0}), InvalidArgument);
  CHECK_THROWS_WITH(Adam({.use_ema = true, .ema_momentum = 1.5}),
                    Catch::Contains("`ema_momentum` must be in the range"));
  CHECK_NOTHROW(Adam({.use_ema = false, .ema_momentum = 1.5}));  // only checked with use_ema, as Keras
  CHECK_THROWS_WITH(Adam({.use_ema = true, .ema_overwrite_frequency = -1}),
                    Catch::Contains("`ema_overwrite_frequency` must be an integer >= 1"));
}

TEST_CASE("optimizers: the GradientTape pattern of a custom train step", "[optimizers]") {
  Variable w = var("w", {2, -1});
  SGD opt({.learning_rate = 0.25});
  for (int step = 0; step < 2; ++step) {
    GradientTape tape;
    Tensor loss = ops::reduce_sum(ops::square(w.read_value()));
    std::vector<Tensor> grads = tape.gradient(loss, {w.read_value()});
    opt.apply(grads, {w});  // w -= 0.25 * 2w: halves w
  }
  check_tensor(w.value(), DType::Float32, Shape{2}, {0.5, -0.25}, 0, 0);
}

TEST_CASE("optimizers: gradients are cast to the variable's dtype", "[optimizers]") {
  Variable a = var("a", {1, 2}), b = var("b", {1, 2});
  SGD x({.learning_rate = 0.1}), y({.learning_rate = 0.1});
  x.apply({t({0.3, 0.7}, DType::Float64)}, {a});
  y.apply({t({0.3, 0.7})}, {b});
  CHECK(a.dtype() == DType::Float32);
  check_tensor(a.value(), DType::Float32, Shape{2}, values_as_double(b.value()), 0, 0);
}

TEST_CASE("optimizers: weight decay exclusions by name pattern and by variable", "[optimizers]") {
  Variable k = var("dense/kernel", {1}), bias = var("dense/bias", {1}), other = var("other/kernel", {1});
  SGD opt({.learning_rate = 0.5, .weight_decay = 0.5});
  opt.exclude_from_weight_decay(std::vector<std::string>{"bias"});
  opt.apply({t({0}), t({0}), t({0})}, {k, bias, other});
  CHECK(k.value().item<float>() == 0.75f);
  CHECK(bias.value().item<float>() == 1.0f);
  // A new call replaces the exclusions (Keras), here by variable and by a regular expression.
  opt.exclude_from_weight_decay({other}, {"^dense/k"});
  opt.apply({t({0}), t({0}), t({0})}, {k, bias, other});
  CHECK(k.value().item<float>() == 0.75f);
  CHECK(bias.value().item<float>() == 0.75f);
  CHECK(other.value().item<float>() == 0.75f);
  CHECK_THROWS_AS(opt.exclude_from_weight_decay(std::vector<std::string>{"("}), InvalidArgument);
}

TEST_CASE("optimizers: EMA finalisation and loss scaling", "[optimizers]") {
  Variable a = var("a", {1.0});
  SGD opt({.learning_rate = 1.0, .use_ema = true, .ema_momentum = 0.5});
  opt.apply({t({1})}, {a});  // a = 0, average = a (first step copies)
  opt.apply({t({1})}, {a});  // a = -1, average = 0.5 * 0 + 0.5 * -1
  CHECK(a.value().item<float>() == -1.0f);
  opt.finalize_variable_values({a});
  CHECK(a.value().item<float>() == -0.5f);
  CHECK_THROWS_WITH(opt.finalize_variable_values({a, a}), Catch::Contains("does not match"));
  Variable b = var("b", {1.0});
  SGD plain;
  plain.apply({t({1})}, {b});
  const float before = b.value().item<float>();
  plain.finalize_variable_values({b});  // no EMA: nothing happens
  CHECK(b.value().item<float>() == before);

  SGD scaled({.learning_rate = 1.0, .loss_scale_factor = 4.0});
  CHECK(scaled.scale_loss(Tensor::scalar<float>(2)).item<float>() == 8.0f);
  CHECK(plain.scale_loss(Tensor::scalar<float>(2)).item<float>() == 2.0f);
  Variable c = var("c", {1.0});
  scaled.apply({t({4})}, {c});  // the gradient is unscaled first
  CHECK(c.value().item<float>() == 0.0f);
}

TEST_CASE("optimizers: set_weights restores a state that continues identically", "[optimizers]") {
  Variable a1 = var("a", {1, 2}), a2 = var("a", {1, 2});
  Nadam x({.learning_rate = 0.1}), y({.learning_rate = 0.1});
  x.apply({t({0.5, -1})}, {a1});
  y.build({a2});
  std::vector<Tensor> state;
  for (const Variable& v : x.variables()) state.push_back(v.value());
  y.set_weights(state);
  a2.assign(a1.value());
  x.apply({t({0.25, 2})}, {a1});
  y.apply({t({0.25, 2})}, {a2});
  check_tensor(a2.value(), DType::Float32, Shape{2}, values_as_double(a1.value()), 0, 0);
  CHECK(iterations(y) == 2);
}

TEST_CASE("optimizers::get resolves Keras names", "[optimizers]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sgd", "SGD"},         {"adam", "Adam"},         {"adamw", "AdamW"},   {"rmsprop", "RMSprop"},
      {"adagrad", "Adagrad"}, {"adadelta", "Adadelta"}, {"adamax", "Adamax"}, {"nadam", "Nadam"},
      {"lion", "Lion"},       {"Adam", "Adam"},         {"RMSprop", "RMSprop"}};
  for (const auto& [id, cls] : cases) {
    INFO(id);
    OptimizerPtr opt = get(id);
    CHECK(opt->class_name() == cls);
  }
  CHECK(get("adam")->get_config()["learning_rate"] == static_cast<double>(0.001f));
  CHECK(get("sgd")->get_config()["learning_rate"] == static_cast<double>(0.01f));
  CHECK(get("adamw")->get_config()["weight_decay"] == 0.004);
  CHECK_THROWS_WITH(get("adamm"), Catch::Contains("Could not interpret optimizer identifier: 'adamm'") &&
                                      Catch::Contains("adam, adamax") && Catch::Contains("sgd"));
}

TEST_CASE("optimizers: configs round-trip through serialize/deserialize", "[optimizers]") {
  std::vector<OptimizerPtr> opts = {
      SGD({.learning_rate = 0.1, .momentum = 0.5, .nesterov = true, .clipnorm = 2.0}).move_to_shared(),
      Adam({.beta_1 = 0.8, .amsgrad = true, .use_ema = true, .ema_overwrite_frequency = 3}).move_to_shared(),
      AdamW({.weight_decay = 0.1, .epsilon = 1e-5, .global_clipnorm = 1.0}).move_to_shared(),
      RMSprop({.rho = 0.7, .momentum = 0.1, .centered = true, .loss_scale_factor = 2.0}).move_to_shared(),
      Adagrad({.initial_accumulator_value = 0.2, .clipvalue = 0.5}).move_to_shared(),
      Adadelta({.rho = 0.5, .weight_decay = 0.01}).move_to_shared(),
      Adamax({.beta_2 = 0.99}).move_to_shared(),
      Nadam({.learning_rate = schedules::CosineDecay({.initial_learning_rate = 0.1, .decay_steps = 10,
                                                      .warmup_target = 0.2, .warmup_steps = 2})})
          .move_to_shared(),
      Lion({.beta_1 = 0.5, .beta_2 = 0.9, .name = "lion_x"}).move_to_shared(),
  };
  for (const OptimizerPtr& opt : opts) {
    INFO(opt->class_name());
    json j = serialize(*opt);
    CHECK(j["module"] == "keras.optimizers");
    CHECK(j["registered_name"].is_null());
    CHECK(j["config"]["gradient_accumulation_steps"].is_null());
    OptimizerPtr back = deserialize(j);
    CHECK(back->class_name() == opt->class_name());
    CHECK(back->get_config() == opt->get_config());
  }
  json bad = serialize(Adam());
  bad["config"]["momentum"] = 0.9;
  CHECK_THROWS_WITH(deserialize(bad), Catch::Contains("Adam.from_config: unknown config key \"momentum\""));
  json acc = serialize(Adam({.gradient_accumulation_steps = 4}));
  CHECK(acc["config"]["gradient_accumulation_steps"] == 4);
  CHECK(deserialize(acc)->get_config()["gradient_accumulation_steps"] == 4);
  acc["config"]["gradient_accumulation_steps"] = 1;
  CHECK_THROWS_WITH(deserialize(acc), Catch::Contains("`gradient_accumulation_steps` must be an integer >= 2. "
                                                      "Received: gradient_accumulation_steps=1"));
  bad = serialize(Adam());
  bad["config"]["decay"] = 0.0;  // Keras ignores it with a warning
  CHECK_NOTHROW(deserialize(bad));
}

TEST_CASE("optimizers: apply_factored takes a gradient as its factors, and checks them", "[optimizers]") {
  // The factors' product a^T @ b is the gradient: apply_factored gives apply()'s weights, through Adam's fused
  // update and through another optimizer's plain one.
  for (bool adam : {true, false}) {
    INFO((adam ? "Adam" : "RMSprop"));
    Variable w1(random::uniform({6, 32}, {.seed = 1}), {.name = "w1"}), w2(w1.value().clone(), {.name = "w2"});
    OptimizerPtr o1 = adam ? Adam().move_to_shared() : RMSprop().move_to_shared();
    OptimizerPtr o2 = adam ? Adam().move_to_shared() : RMSprop().move_to_shared();
    const Tensor a = random::uniform({3, 6}, {.seed = 2}), b = random::uniform({3, 32}, {.seed = 3});
    for (int step = 0; step < 2; ++step) {
      o1->apply_factored({SourceGradient{{}, a, b}}, {w1});
      o2->apply({ops::matmul(a, b, {.transpose_a = true})}, {w2});
    }
    CHECK(w1.value().to_vector<float>() == w2.value().to_vector<float>());
  }
  Variable w(ops::zeros({6, 32}), {.name = "w"});
  Adam opt;
  CHECK_THROWS_WITH(opt.apply_factored({SourceGradient{{}, ops::zeros({3, 6}), ops::zeros({2, 32})}}, {w}),
                    Catch::Contains("factors of shapes (3, 6) and (2, 32)"));
  CHECK_THROWS_WITH(opt.apply_factored({SourceGradient{{}, ops::zeros({6}), ops::zeros({32})}}, {w}),
                    Catch::Contains("'w'") && Catch::Contains("expected (k, m) and (k, n)"));
  CHECK_THROWS_WITH(opt.apply_factored({SourceGradient{{}, ops::zeros({3, 5}), ops::zeros({3, 32})}}, {w}),
                    Catch::Contains("has shape (5, 32), expected the variable's shape (6, 32)"));
}
