// Mixed precision end to end (Keras: keras.mixed_precision): policies, what each layer keeps in which dtype,
// gradients through the autocast of variables, compile's automatic LossScaleOptimizer, the loss scale in
// checkpoints (Ember's files and one written by Keras), a bit-identical resume with loss scaling, and
// learning under mixed_float16 / mixed_bfloat16 against float32.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "framework/ember.h"
#include "framework/ops/dispatch.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::TempDir;
using ember::testing::values_as_double;
using nlohmann::json;

namespace {

// Sets the global policy for one test and restores it even when a check throws.
struct PolicyScope {
  mixed_precision::Policy old = mixed_precision::global_policy();
  explicit PolicyScope(const std::string& name) { mixed_precision::set_global_policy(name); }
  ~PolicyScope() { mixed_precision::set_global_policy(old); }
};

std::shared_ptr<Sequential> mp_mlp(uint64_t seed) {
  backend::clear_session();
  random::set_seed(seed);
  return std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({6}), layers::Dense(16, {.activation = "relu"}), layers::Dense(3, {.dtype = "float32"})});
}

void mp_compile(Model& m, OptimizerArg opt = optimizers::Adam({.learning_rate = 0.01})) {
  m.compile({.optimizer = std::move(opt), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
}

const mixed_precision::LossScaleOptimizer& lso_of(const Model& m) {
  const auto* lso = dynamic_cast<const mixed_precision::LossScaleOptimizer*>(&m.optimizer());
  REQUIRE(lso != nullptr);
  return *lso;
}

struct MpData {
  Tensor x, y;
};

MpData mp_data() {
  random::set_seed(3);
  Tensor x = random::normal({40, 6});
  Tensor y = ops::cast(ops::argmax(ops::matmul(x, random::normal({6, 3})), -1), DType::Int64);
  return {x, y};
}

}  // namespace

TEST_CASE("policies: names, dtypes, the global policy", "[mixed_precision]") {
  using mixed_precision::Policy;
  CHECK(Policy("mixed_float16").compute_dtype() == DType::Float16);
  CHECK(Policy("mixed_float16").variable_dtype() == DType::Float32);
  CHECK(Policy("mixed_bfloat16").compute_dtype() == DType::BFloat16);
  CHECK(Policy("mixed_bfloat16").variable_dtype() == DType::Float32);
  CHECK(Policy("bfloat16").variable_dtype() == DType::BFloat16);
  CHECK(Policy("float16").compute_dtype() == DType::Float16);
  CHECK(Policy().name() == "float32");
  CHECK_THROWS_AS(Policy("mixed_float32"), InvalidArgument);
  {
    PolicyScope scope("mixed_bfloat16");
    CHECK(mixed_precision::global_policy().name() == "mixed_bfloat16");
    CHECK(layers::Dense(2).dtype_policy().name() == "mixed_bfloat16");
    CHECK(layers::Dense(2, {.dtype = "float32"}).dtype_policy().name() == "float32");
  }
  CHECK(mixed_precision::global_policy().name() == "float32");
}

TEST_CASE("layers keep float32 variables and compute in the policy's dtype", "[mixed_precision]") {
  for (const char* name : {"mixed_float16", "mixed_bfloat16"}) {
    INFO(name);
    PolicyScope scope(name);
    const DType compute = mixed_precision::Policy(name).compute_dtype();
    Tensor x = random::uniform({2, 4, 4, 3}, {.seed = 1});  // float32 input: cast on entry
    layers::Conv2D conv(4, 3, {.padding = "same"});
    layers::BatchNormalization bn;
    layers::LayerNormalization ln;
    layers::Flatten flat;
    layers::Dense dense(5, {.activation = "relu"});
    layers::Dense last(3, {.dtype = "float32"});
    layers::Softmax softmax({.dtype = "float32"});
    Tensor h = conv(x);
    CHECK(h.dtype() == compute);
    h = bn(h, true);
    CHECK(h.dtype() == compute);
    h = dense(flat(ln(h)));
    CHECK(h.dtype() == compute);
    Tensor y = softmax(last(h));  // a float32 layer casts its half input back up
    CHECK(y.dtype() == DType::Float32);
    for (const Variable& v : conv.weights()) CHECK(v.dtype() == DType::Float32);
    for (const Variable& v : bn.weights()) CHECK(v.dtype() == DType::Float32);  // moving statistics too
    for (const Variable& v : dense.weights()) CHECK(v.dtype() == DType::Float32);
    // Integer inputs are never cast: Embedding looks up with them, and returns the compute dtype.
    layers::Embedding emb(10, 2);
    Tensor e = emb(testing::make({1, 2, 3}, {3}, DType::Int32));
    CHECK(e.dtype() == compute);
    CHECK(emb.weights()[0].dtype() == DType::Float32);
  }
}

TEST_CASE("gradients flow through the autocast in float32 for float32 variables", "[mixed_precision][autodiff]") {
  Tensor x = random::normal({8, 5}, {.seed = 4});
  auto grads_under = [&](const std::string& policy) {
    PolicyScope scope(policy);
    random::set_seed(11);
    layers::Dense d(3);
    d(x);  // build
    GradientTape tape;
    Tensor loss = ops::reduce_sum(ops::square(ops::cast(d(x), DType::Float32)));
    std::vector<Tensor> sources{d.kernel(), d.bias()};
    return tape.gradient(loss, sources);
  };
  const std::vector<Tensor> full = grads_under("float32");
  for (const char* name : {"mixed_float16", "mixed_bfloat16"}) {
    INFO(name);
    const std::vector<Tensor> half = grads_under(name);
    REQUIRE(half.size() == 2);
    for (size_t i = 0; i < 2; ++i) {
      CHECK(half[i].dtype() == DType::Float32);
      const std::vector<float> a = full[i].to_vector<float>(), b = half[i].to_vector<float>();
      REQUIRE(a.size() == b.size());
      // The forward pass rounds to 8 (bfloat16) or 11 (float16) significant bits: errors scale with the
      // largest gradient entry, not each entry's own size.
      const double tol = std::string(name) == "mixed_bfloat16" ? 2e-2 : 3e-3;
      double largest = 0;
      for (float v : a) largest = std::max(largest, static_cast<double>(std::abs(v)));
      for (size_t k = 0; k < a.size(); ++k) CHECK(std::abs(a[k] - b[k]) <= tol * largest);
    }
  }
}

namespace {
int g_weight_casts = 0;  // casts of mp_mlp's first kernel (6 x 16, float32), counted by a hook
void count_weight_casts(const OpRecord& r) {
  if (r.op == OpId::cast && r.inputs[0].dtype() == DType::Float32 && r.inputs[0].shape() == Shape{6, 16})
    ++g_weight_casts;
}
}  // namespace

TEST_CASE("outside tapes a layer casts each weight once per value, and again after it changes",
          "[mixed_precision]") {
  for (const char* name : {"mixed_float16", "mixed_bfloat16"}) {
    INFO(name);
    PolicyScope scope(name);
    auto model = mp_mlp(5);
    mp_compile(*model, optimizers::SGD({.learning_rate = 0.1}));
    const MpData d = mp_data();
    const Tensor first = model->predict(d.x, {.batch_size = 8});  // five batches
    const int hook = add_op_hook(count_weight_casts);
    g_weight_casts = 0;
    const Tensor again = model->predict(d.x, {.batch_size = 8});
    const int cached = g_weight_casts;
    // An optimizer step (in place where it can) and an assignment each give the next read a new cast.
    model->train_on_batch(d.x, d.y);
    // The batch size predict has traced already: a new one would trace again, and each trace casts once.
    g_weight_casts = 0;
    const Tensor trained = model->predict(d.x, {.batch_size = 8});
    const int after_step = g_weight_casts;
    auto& dense = *model->layers()[0];
    const Variable kernel = dense.weights()[0];
    Variable(kernel).assign(ops::zeros_like(kernel.value()));
    g_weight_casts = 0;
    const Tensor zeroed = model->predict(d.x, {.batch_size = 8});
    const int after_assign = g_weight_casts;
    remove_op_hook(hook);
    CHECK(cached == 0);
    CHECK(after_step == 1);
    CHECK(after_assign == 1);
    CHECK(values_as_double(again) == values_as_double(first));
    CHECK(values_as_double(trained) != values_as_double(first));
    // With a zero kernel the first layer gives relu(bias): every row of the output is the same.
    const std::vector<double> z = values_as_double(zeroed);
    for (size_t i = 3; i < z.size(); ++i) CHECK(z[i] == z[i % 3]);
  }
}

TEST_CASE("a variable's version changes with every assignment and every update in place", "[mixed_precision]") {
  Variable v(ops::zeros({3}));
  const uint64_t v0 = v.version();
  v.assign(ops::ones({3}));
  const uint64_t v1 = v.version();
  CHECK(v1 != v0);
  REQUIRE(v.exclusive_value() != nullptr);
  CHECK(v.version() != v1);
  Variable w(ops::zeros({3}));
  CHECK(w.version() != v.version());
  const Tensor held = v.value();  // a second holder: no update in place, no new version
  const uint64_t v2 = v.version();
  CHECK(v.exclusive_value() == nullptr);
  CHECK(v.version() == v2);
}

TEST_CASE("compile wraps the optimizer in a LossScaleOptimizer under mixed_float16 only", "[mixed_precision][fit]") {
  {
    PolicyScope scope("mixed_float16");
    auto m = mp_mlp(1);
    mp_compile(*m);
    const auto& lso = lso_of(*m);
    CHECK(lso.name() == "loss_scale_optimizer");
    CHECK(lso.inner_optimizer()->class_name() == "Adam");
    CHECK(lso.dynamic_scale() == 32768.0);
    CHECK(lso.dynamic_growth_steps() == 2000);
    // The compile config keeps the optimizer compile was given, as Keras does.
    CHECK(m->get_compile_config()["optimizer"]["class_name"] == "Adam");
    // Already wrapped: not wrapped twice. auto_scale_loss = false: left alone.
    auto m2 = mp_mlp(1);
    mp_compile(*m2, mixed_precision::LossScaleOptimizer(optimizers::SGD(), {.initial_scale = 64}));
    CHECK(lso_of(*m2).inner_optimizer()->class_name() == "SGD");
    CHECK(lso_of(*m2).dynamic_scale() == 64);
    CHECK(m2->get_compile_config()["optimizer"]["class_name"] == "LossScaleOptimizer");
    auto m3 = mp_mlp(1);
    m3->compile({.optimizer = "adam", .loss = "mse", .auto_scale_loss = false});
    CHECK(m3->optimizer().class_name() == "Adam");
  }
  for (const char* name : {"mixed_bfloat16", "float32"}) {
    PolicyScope scope(name);
    auto m = mp_mlp(1);
    mp_compile(*m);
    CHECK(m->optimizer().class_name() == "Adam");
  }
}

TEST_CASE("fit under mixed_float16 scales the loss and recovers from overflow", "[mixed_precision][fit]") {
  PolicyScope scope("mixed_float16");
  MpData d = mp_data();
  auto m = mp_mlp(2);
  // A scale far above float16's range: the first steps overflow, are skipped and halve it.
  mp_compile(*m, mixed_precision::LossScaleOptimizer(optimizers::Adam({.learning_rate = 0.01}),
                                                     {.initial_scale = std::ldexp(1.0, 40), .dynamic_growth_steps = 4}));
  const std::vector<Tensor> before = m->get_weights();
  History h = m->fit(d.x, d.y, {.batch_size = 8, .epochs = 6, .verbose = 0, .shuffle = false});
  const auto& lso = lso_of(*m);
  CHECK(lso.dynamic_scale() < std::ldexp(1.0, 40));
  CHECK(lso.iterations().value().item<int64_t>() > 0);
  CHECK(lso.iterations().value().item<int64_t>() < 30);  // some of the 30 steps were skipped
  for (const Tensor& w : m->get_weights()) CHECK(ops::reduce_all(ops::is_finite(w)).item<bool>());
  CHECK(h.history.at("loss").back() < h.history.at("loss").front());
  CHECK(m->get_weights()[0].to_vector<float>() != before[0].to_vector<float>());
}

TEST_CASE("a traced loss-scaled step hands the optimizer its half gradients uncast, with eager's bits",
          "[mixed_precision][function]") {
  PolicyScope scope("mixed_float16");
  const MpData d = mp_data();
  auto eager_model = mp_mlp(4), traced_model = mp_mlp(4);
  // Growth every 2 steps and a scale float16 overflows at first: skipped, halved and doubled steps all happen.
  const mixed_precision::LossScaleOptimizerOptions o{.initial_scale = std::ldexp(1.0, 30), .dynamic_growth_steps = 2};
  mixed_precision::LossScaleOptimizer eager_opt(optimizers::Adam({.learning_rate = 0.01}), o),
      traced_opt(optimizers::Adam({.learning_rate = 0.01}), o);
  auto step_of = [](Sequential& model, mixed_precision::LossScaleOptimizer& opt) {
    return [&](const Tensor& x, const Tensor& y) {
      std::vector<Variable> vars = model.trainable_weights();
      GradientTape tape;
      const Tensor loss = ops::reduce_mean(ops::sparse_softmax_cross_entropy_with_logits(y, model(x, true)));
      opt.apply(tape.gradient(opt.scale_loss(loss), vars), vars);
      return loss;
    };
  };
  auto eager_step = step_of(*eager_model, eager_opt);
  auto traced_step = ember::function(step_of(*traced_model, traced_opt));
  eager_opt.build(eager_model->trainable_weights());
  traced_opt.build(traced_model->trainable_weights());
  for (int i = 0; i < 24; ++i) {
    const Tensor x = ops::slice(d.x, {(i % 5) * 8, 0}, {8, 6}), y = ops::slice(d.y, {(i % 5) * 8}, {8});
    CHECK(ember::testing::same_bits(eager_step(x, y), traced_step(x, y)));
  }
  CHECK(eager_opt.dynamic_scale() == traced_opt.dynamic_scale());
  CHECK(eager_opt.iterations().value().item<int64_t>() == traced_opt.iterations().value().item<int64_t>());
  CHECK(eager_opt.iterations().value().item<int64_t>() < 24);  // some steps were skipped
  const std::vector<Tensor> a = eager_model->get_weights(), b = traced_model->get_weights();
  for (size_t k = 0; k < a.size(); ++k) CHECK(ember::testing::same_bits(a[k], b[k]));
  // The first Dense layer computes in float16: its kernel's and bias's gradients reach the update as float16 (the
  // update widens them as it unscales); the float32 logits layer's are float32.
  const graph::Graph& g = traced_step.concrete_functions().at(0)->graph();
  int half = 0, wide = 0, updates = 0;
  for (const graph::Node& n : g.nodes) {
    if (n.kind != graph::NodeKind::HostCall || !n.widens_half_gradients) continue;
    ++updates;
    for (int v : n.inputs) {
      if (v < 0) continue;
      const DType dt = g.values.at(static_cast<size_t>(v)).dtype;
      half += dt == DType::Float16;
      wide += dt == DType::Float32;
    }
  }
  CHECK(updates == 1);
  CHECK(half == 2);
  CHECK(wide == 2);
}

TEST_CASE("the loss scale round-trips through every checkpoint format", "[mixed_precision][checkpoint]") {
  PolicyScope scope("mixed_float16");
  TempDir dir("mp_ckpt");
  MpData d = mp_data();
  auto m = mp_mlp(3);
  mp_compile(*m);
  m->fit(d.x, d.y, {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  auto& lso = const_cast<mixed_precision::LossScaleOptimizer&>(lso_of(*m));
  std::vector<Tensor> state;
  for (const Variable& v : lso.variables()) state.push_back(v.value());
  state[2] = Tensor::scalar<int64_t>(9);    // step_counter
  state[3] = Tensor::scalar<float>(512.f);  // dynamic_scale
  lso.set_weights(state);
  const Tensor probe = ops::slice(d.x, {0, 0}, {5, -1});
  const std::vector<float> expected = m->predict(probe, {.verbose = 0}).to_vector<float>();

  for (const char* file : {"m.weights.h5", "m.keras", "m.h5"}) {
    INFO(file);
    const std::string path = dir.file(file);
    if (std::string(file) == "m.weights.h5") m->save_weights(path);
    else m->save(path);
    std::shared_ptr<Model> back;
    if (std::string(file) == "m.weights.h5") {
      back = mp_mlp(4);
      mp_compile(*back);
      back->load_weights(path);
    } else {
      back = std::make_shared<Model>(models::load_model(path));
    }
    const auto& b = lso_of(*back);
    CHECK(b.dynamic_scale() == 512.0);
    CHECK(b.step_counter() == 9);
    CHECK(b.iterations().value().item<int64_t>() == lso.iterations().value().item<int64_t>());
    CHECK(back->predict(probe, {.verbose = 0}).to_vector<float>() == expected);
  }
}

TEST_CASE("a mixed_float16 model saved by Keras loads with its loss scale", "[mixed_precision][checkpoint][keras]") {
  std::ifstream in(testing::fixture_path("mixed_precision/mixed_float16_mlp.json"));
  REQUIRE(in.good());
  const json expected = json::parse(in);
  Model m = models::load_model(testing::fixture_path("mixed_precision/mixed_float16_mlp.keras").string());
  CHECK(m.dtype_policy().name() == "mixed_float16");
  CHECK(m.layers()[0]->dtype_policy().name() == "mixed_float16");
  CHECK(m.layers()[1]->dtype_policy().name() == "float32");
  const auto& lso = lso_of(m);  // compile_from_config wrapped Keras's Adam again
  CHECK(lso.dynamic_scale() == expected["dynamic_scale"].get<double>());
  CHECK(lso.step_counter() == expected["step_counter"].get<int64_t>());
  CHECK(lso.iterations().value().item<int64_t>() == expected["iterations"].get<int64_t>());
  const std::vector<double> xs = expected["x"].get<std::vector<double>>();
  const Tensor x = testing::make(xs, {static_cast<int64_t>(xs.size() / 4), 4}, DType::Float32);
  const std::vector<float> got = m.predict(x, {.verbose = 0}).to_vector<float>();
  const std::vector<double> want = expected["predictions"].get<std::vector<double>>();
  REQUIRE(got.size() == want.size());
  // The hidden layer computes in float16: Keras's and Ember's roundings may differ in the last bits.
  for (size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 2e-3 * (1 + std::abs(want[i])));
}

TEST_CASE("BackupAndRestore resumes a mixed_float16 fit with loss scaling bit-identically",
          "[mixed_precision][checkpoint][resume]") {
  PolicyScope scope("mixed_float16");
  TempDir dir("mp_backup");
  MpData d = mp_data();
  // Overflowing first steps and fast growth make the scale move across the epoch boundary.
  auto make_model = [](uint64_t seed) {
    auto m = mp_mlp(seed);
    mp_compile(*m, mixed_precision::LossScaleOptimizer(optimizers::Adam({.learning_rate = 0.01}),
                                                       {.initial_scale = std::ldexp(1.0, 30), .dynamic_growth_steps = 3}));
    return m;
  };
  const FitOptions base{.batch_size = 8, .epochs = 4, .verbose = 0, .shuffle = true};

  auto full = make_model(1);
  random::set_seed(100);
  full->fit(d.x, d.y, base);

  auto first = make_model(1);
  random::set_seed(100);
  FitOptions o = base;
  o.epochs = 2;
  o.callbacks = {callbacks::BackupAndRestore(dir.file("backup"), {.delete_checkpoint = false})};
  first->fit(d.x, d.y, o);
  const double scale_at_2 = lso_of(*first).dynamic_scale();

  auto resumed = make_model(7);
  random::set_seed(999);
  o = base;
  o.callbacks = {callbacks::BackupAndRestore(dir.file("backup"))};
  History h = resumed->fit(d.x, d.y, o);
  CHECK(h.epoch == std::vector<int>{2, 3});
  CHECK(scale_at_2 < std::ldexp(1.0, 30));
  CHECK(lso_of(*resumed).dynamic_scale() == lso_of(*full).dynamic_scale());
  CHECK(lso_of(*resumed).step_counter() == lso_of(*full).step_counter());
  CHECK(lso_of(*resumed).iterations().value().item<int64_t>() == lso_of(*full).iterations().value().item<int64_t>());
  const std::vector<Tensor> a = full->get_weights(), b = resumed->get_weights();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].to_vector<float>() == b[i].to_vector<float>());
}

TEST_CASE("the Fashion-MNIST MLP learns as well under mixed_float16 and mixed_bfloat16", "[mixed_precision][learning]") {
  auto [train, test] = datasets::fashion_mnist::load_data();
  auto prepare = [](const Tensor& images, int64_t n) {
    return ops::cast(ops::reshape(ops::slice(images, {0, 0, 0}, {n, -1, -1}), {n, 784}), DType::Float32) / 255.0f;
  };
  const Tensor x = prepare(train.x, 6000), y = ops::slice(train.y, {0}, {6000});
  const Tensor xt = prepare(test.x, 2000), yt = ops::slice(test.y, {0}, {2000});
  auto accuracy_under = [&](const std::string& policy) {
    PolicyScope scope(policy);
    backend::clear_session();
    random::set_seed(1);
    Sequential model({layers::Input({784}), layers::Dense(128, {.activation = "relu"}),
                      layers::Dense(10, {.dtype = "float32"})});
    model.compile({.optimizer = optimizers::Adam(),
                   .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .metrics = {"accuracy"}});
    random::set_seed(2);
    model.fit(x, y, {.batch_size = 64, .epochs = 4, .verbose = 0});
    return model.evaluate(xt, yt, {.verbose = 0}).at("accuracy");
  };
  const double full = accuracy_under("float32");
  const double f16 = accuracy_under("mixed_float16");
  const double bf16 = accuracy_under("mixed_bfloat16");
  INFO("float32 " << full << ", mixed_float16 " << f16 << ", mixed_bfloat16 " << bf16);
  CHECK(full > 0.78);
  CHECK(std::abs(f16 - full) <= 0.01);
  CHECK(std::abs(bf16 - full) <= 0.01);
}
