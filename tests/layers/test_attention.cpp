// The attention layers (MultiHeadAttention, Attention, AdditiveAttention): conformance, Keras's weight names and
// shapes, masks and causal masking, scores, functional models and Keras-written checkpoints, and errors. Keras's
// numbers themselves are checked by tests/layers/test_keras_parity.cpp's fixtures.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/io/hdf5_file.h"
#include "framework/ops/dispatch.h"
#include "tests/layers/attention_testing.h"
#include "tests/support/layer_testing.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using namespace ember::testing;
using namespace ember::testing::attention;

TEST_CASE("attention layers pass the layer conformance check", "[layers][attention]") {
  run_layer_test({.what = "MultiHeadAttention(2, 3) on {query, value}",
                  .make = [] { return std::make_shared<layers::MultiHeadAttention>(2, 3); },
                  .input_shapes = {{2, 4, 5}, {2, 3, 5}},
                  .trainable_weights = 8,
                  .weight_shapes = {{5, 2, 3}, {2, 3}, {5, 2, 3}, {2, 3}, {5, 2, 3}, {2, 3}, {2, 3, 5}, {5}}});
  run_layer_test({.what = "MultiHeadAttention(2, 2, value_dim 3, output_shape 4, no bias) on {query, value, key}",
                  .make =
                      [] {
                        return std::make_shared<layers::MultiHeadAttention>(
                            2, 2, layers::MultiHeadAttentionOptions{.value_dim = 3, .use_bias = false, .output_shape = 4});
                      },
                  .input_shapes = {{2, 3, 4}, {2, 5, 6}, {2, 5, 3}},
                  .trainable_weights = 4,
                  .weight_shapes = {{4, 2, 2}, {3, 2, 2}, {6, 2, 3}, {2, 3, 4}}});
  run_layer_test({.what = "Attention()",
                  .make = [] { return std::make_shared<layers::Attention>(); },
                  .input_shapes = {{2, 3, 4}, {2, 5, 4}}});
  run_layer_test({.what = "Attention(use_scale, concat) on {query, value, key}",
                  .make =
                      [] {
                        return std::make_shared<layers::Attention>(
                            layers::AttentionOptions{.use_scale = true, .score_mode = "concat"});
                      },
                  .input_shapes = {{2, 3, 4}, {2, 5, 2}, {2, 5, 4}},
                  .trainable_weights = 2,
                  .weight_shapes = {{}, {}}});
  run_layer_test({.what = "AdditiveAttention()",
                  .make = [] { return std::make_shared<layers::AdditiveAttention>(); },
                  .input_shapes = {{2, 3, 4}, {2, 5, 4}},
                  .trainable_weights = 1,
                  .weight_shapes = {{4}}});
}

TEST_CASE("MultiHeadAttention names its weights as Keras's EinsumDense sublayers", "[layers][attention]") {
  backend::clear_session();
  layers::MultiHeadAttention mha(2, 3);
  mha({input_of({1, 4, 5}, 1), input_of({1, 3, 5}, 2)});
  std::vector<std::string> names;
  for (const Variable& v : mha.weights()) names.push_back(v.name());
  CHECK(names == std::vector<std::string>{"multi_head_attention/query/kernel", "multi_head_attention/query/bias",
                                          "multi_head_attention/key/kernel", "multi_head_attention/key/bias",
                                          "multi_head_attention/value/kernel", "multi_head_attention/value/bias",
                                          "multi_head_attention/attention_output/kernel",
                                          "multi_head_attention/attention_output/bias"});
  // The key length may differ from call to call; only the features are fixed by the build.
  CHECK(mha({input_of({2, 6, 5}, 3), input_of({2, 7, 5}, 4)}).shape() == Shape{2, 6, 5});
}

TEST_CASE("MultiHeadAttention's masks combine as Keras's _compute_attention_mask", "[layers][attention]") {
  layers::MultiHeadAttention mha(2, 3);
  const Tensor q = input_of({2, 4, 5}, 11), v = input_of({2, 4, 5}, 12);
  const Tensor plain = mha({q, v});
  // use_causal_mask is the lower-triangular attention_mask.
  std::vector<double> tril;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) tril.push_back(j <= i);
  const Tensor causal = mha.attend(q, v, {.use_causal_mask = true});
  CHECK(max_abs_diff(causal, mha.attend(q, v, {.attention_mask = bool_mask(tril, {2, 4, 4})})) < 1e-6);
  CHECK(max_abs_diff(causal, plain) > 1e-3);
  // A value_mask is an attention_mask repeated over the queries; 0/1 integers work as booleans.
  const std::vector<double> vm = {1, 0, 1, 1, 0, 1, 1, 0};
  std::vector<double> full;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) full.push_back(vm[b * 4 + j]);
  const Tensor by_value = mha.attend(q, v, {.value_mask = make(vm, {2, 4}, DType::Int32)});
  CHECK(max_abs_diff(by_value, mha.attend(q, v, {.attention_mask = bool_mask(full, {2, 4, 4})})) < 1e-6);
  // Scores: (batch, heads, query, key), rows summing to 1, masked keys ~0.
  auto [out, scores] = mha.attend_with_scores(q, v, {.value_mask = make(vm, {2, 4}, DType::Int32)});
  CHECK(max_abs_diff(out, by_value) < 1e-6);
  REQUIRE(scores.shape() == Shape{2, 2, 4, 4});
  const std::vector<double> s = values_as_double(scores);
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 4; ++i) {
        double sum = 0;
        for (int j = 0; j < 4; ++j) {
          const double p = s[((b * 2 + h) * 4 + i) * 4 + j];
          sum += p;
          if (vm[b * 4 + j] == 0) CHECK(p < 1e-30);
        }
        CHECK(sum == Approx(1.0).margin(1e-6));
      }
  // The mask in one place, for callers that compute their own: (batch, query, key) booleans.
  std::optional<Tensor> m = layers::MultiHeadAttention::compute_attention_mask(
      q, v, {.query_mask = bool_mask({1, 1, 1, 0, 1, 1, 1, 1}, {2, 4}), .use_causal_mask = true});
  REQUIRE(m);
  CHECK(m->shape() == Shape{2, 4, 4});
  CHECK(m->dtype() == DType::Bool);
  CHECK_FALSE(layers::MultiHeadAttention::compute_attention_mask(q, v, {}));
}

TEST_CASE("MultiHeadAttention's dropout acts on the attention weights only in training", "[layers][attention]") {
  layers::MultiHeadAttention mha(2, 3, {.dropout = 0.5, .seed = 3});
  const Tensor q = input_of({2, 4, 5}, 21), v = input_of({2, 3, 5}, 22);
  const Tensor inference = mha({q, v}, false);
  CHECK(max_abs_diff(mha({q, v}, false), inference) == 0);
  CHECK(max_abs_diff(mha({q, v}, true), inference) > 1e-4);
  auto [out, scores] = mha.attend_with_scores(q, v, {.training = true});
  CHECK(out.shape() == Shape{2, 4, 5});
  CHECK(scores.shape() == Shape{2, 2, 4, 3});
}

TEST_CASE("Attention's query and value masks, causal masking and scores", "[layers][attention]") {
  layers::Attention att;
  const Tensor q = input_of({2, 3, 4}, 31), v = input_of({2, 3, 4}, 32);
  // A masked query position gives zeros.
  const Tensor out = att.attend({q, v}, {.query_mask = bool_mask({1, 0, 1, 1, 1, 1}, {2, 3})});
  const std::vector<double> o = values_as_double(out);
  for (int c = 0; c < 4; ++c) CHECK(o[4 + c] == 0);
  // Causal: the first query sees only the first value.
  auto [causal, weights] = att.attend_with_scores({q, v}, {.use_causal_mask = true});
  CHECK(weights.shape() == Shape{2, 3, 3});
  const std::vector<double> w = values_as_double(weights);
  CHECK(w[0] == Approx(1.0));
  CHECK(w[1] < 1e-6);
  CHECK(max_abs_diff(ops::slice(causal, {0, 0, 0}, {2, 1, 4}), ops::slice(v, {0, 0, 0}, {2, 1, 4})) < 1e-6);
}

namespace {
int g_fused_runs = 0;
void count_fused(const OpRecord& r) { g_fused_runs += r.op == OpId::fused_attention; }

// The layer's output and its weights' gradients of sum(output * w), through attend() (fused) or attend_with_scores()
// (the composite, which returns the weights).
template <class L, class Call>
std::vector<Tensor> output_and_grads(L& layer, Call call) {
  GradientTape tape;
  const Tensor y = call();
  const Tensor w = make(uniform_in(y.num_elements(), -1, 1, 77), y.shape(), y.dtype());
  std::vector<Tensor> out{y};
  for (const Tensor& g : tape.gradient(ops::reduce_sum(y * w), layer.trainable_weights())) out.push_back(g);
  return out;
}

void check_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double tol) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("tensor " << i << " (0: output, then the weights' gradients)");
    CHECK(max_abs_diff(a[i], b[i]) < tol);
  }
}
}  // namespace

TEST_CASE("attention layers run the fused attention op unless the weights are returned or dropped out",
          "[layers][attention]") {
  // 70 queries over 90 values: the fused kernels' blocks take turns.
  const Tensor q = input_of({2, 70, 16}, 41), v = input_of({2, 90, 16}, 42);
  const int hook = add_op_hook(&count_fused);
  for (const bool causal : {false, true}) {
    INFO("causal " << causal);
    layers::MultiHeadAttention mha(4, 8);
    mha({q, v});
    g_fused_runs = 0;
    const auto fused = output_and_grads(mha, [&] { return mha.attend(q, v, {.use_causal_mask = causal}); });
    CHECK(g_fused_runs == 1);
    const auto composite =
        output_and_grads(mha, [&] { return mha.attend_with_scores(q, v, {.use_causal_mask = causal}).first; });
    CHECK(g_fused_runs == 1);
    CHECK(fused.size() == 9);
    check_same(fused, composite, 2e-5);

    layers::Attention att({.use_scale = true});
    att({q, v});
    g_fused_runs = 0;
    const auto att_fused = output_and_grads(att, [&] { return att.attend({q, v}, {.use_causal_mask = causal}); });
    CHECK(g_fused_runs == 1);
    const auto att_composite =
        output_and_grads(att, [&] { return att.attend_with_scores({q, v}, {.use_causal_mask = causal}).first; });
    CHECK(g_fused_runs == 1);
    check_same(att_fused, att_composite, 2e-5);
  }
  // Any other mask goes through the composite.
  layers::MultiHeadAttention mha(2, 4);
  g_fused_runs = 0;
  mha.attend(q, v, {.value_mask = ops::cast(ops::ones({2, 90}), DType::Bool)});
  CHECK(g_fused_runs == 0);
  remove_op_hook(hook);
}

TEST_CASE("MultiHeadAttention takes num_heads and key_dim as options too, as Keras's keywords", "[layers][attention]") {
  const Tensor q = input_of({2, 4, 5}, 43), v = input_of({2, 3, 5}, 44);
  const auto config_of = [](const layers::MultiHeadAttention& l) {
    nlohmann::json c = l.get_config();
    c.erase("name");  // one per layer
    return c;
  };
  layers::MultiHeadAttention by_options({.num_heads = 4, .key_dim = 16, .value_dim = 8});
  layers::MultiHeadAttention positional(4, 16, {.value_dim = 8});
  CHECK(config_of(by_options) == config_of(positional));
  CHECK(by_options.get_config().at("num_heads") == 4);
  CHECK(by_options.get_config().at("key_dim") == 16);
  CHECK(by_options.get_config().at("value_dim") == 8);
  random::set_seed(3);
  const std::vector<float> a = by_options({q, v}).to_vector<float>();
  random::set_seed(3);
  CHECK(positional({q, v}).to_vector<float>() == a);
  CHECK(config_of(layers::MultiHeadAttention(4, 16, {.num_heads = 4})) == config_of(layers::MultiHeadAttention(4, 16)));
  CHECK_THAT(message_of<InvalidArgument>([] { layers::MultiHeadAttention({.num_heads = 4}); }),
             Catch::Contains("key_dim is required"));
  CHECK_THAT(message_of<InvalidArgument>([] { layers::MultiHeadAttention(4, 16, {.key_dim = 8}); }),
             Catch::Contains("given twice"));
}

TEST_CASE("attention layers reject bad inputs and options with clear errors", "[layers][attention]") {
  const Tensor q = input_of({2, 4, 5}, 41), v = input_of({2, 3, 5}, 42);
  CHECK_THAT(message_of<InvalidArgument>([&] { layers::MultiHeadAttention(2, 3)(q); }),
             Catch::Contains("expected {query, value} or {query, value, key}, got 1 inputs"));
  CHECK_THAT(message_of<InvalidArgument>([&] { layers::MultiHeadAttention(2, 3)({input_of({2, 5}, 1), v}); }),
             Catch::Contains("(batch, length, features)"));
  CHECK_THAT(message_of<InvalidArgument>([&] { layers::MultiHeadAttention(2, 3)({q, v, input_of({2, 4, 5}, 2)}); }),
             Catch::Contains("key and value one length"));
  CHECK_THAT(message_of<InvalidArgument>([&] { layers::MultiHeadAttention(2, 3)({q, input_of({3, 3, 5}, 3)}); }),
             Catch::Contains("one batch size"));
  CHECK_THAT(message_of<InvalidArgument>([&] {
               layers::MultiHeadAttention(2, 3).attend(q, v, {.attention_mask = bool_mask({1, 1, 1}, {1, 1, 3, 1})});
             }),
             Catch::Contains("attention_mask of shape"));
  CHECK_THAT(message_of<InvalidArgument>([&] { layers::MultiHeadAttention(0, 3); }), Catch::Contains("positive"));
  CHECK_THAT(message_of<Unimplemented>([&] { layers::MultiHeadAttention(2, 3, {.attention_axes = {2}}); }),
             Catch::Contains("attention_axes"));
  CHECK_THAT(message_of<Unimplemented>([&] { layers::MultiHeadAttention(2, 3)({input_of({2, 3, 4, 5}, 4), input_of({2, 3, 4, 5}, 5)}); }),
             Catch::Contains("several axes"));
  nlohmann::json gated = layers::MultiHeadAttention(2, 3).get_config();
  gated["use_gate"] = true;
  CHECK_THAT(message_of<Unimplemented>([&] { deserialize_layer({{"class_name", "MultiHeadAttention"}, {"config", gated}}); }),
             Catch::Contains("use_gate"));
  CHECK_THAT(message_of<InvalidArgument>([&] { layers::Attention()({q, v, v, v}); }),
             Catch::Contains("a list of 2 or 3 inputs"));
  CHECK_THAT(message_of<InvalidArgument>([&] { layers::Attention()({q, input_of({2, 3, 4}, 6)}); }),
             Catch::Contains("same number of features"));
  CHECK_THAT(message_of<InvalidArgument>([&] { layers::Attention({.score_mode = "general"}); }),
             Catch::Contains("score_mode"));
  CHECK_THAT(message_of<InvalidArgument>([&] {
               layers::Attention().attend({q, v}, {.value_mask = bool_mask({1, 1}, {1, 2})});
             }),
             Catch::Contains("value mask of shape (2, 3)"));
}

TEST_CASE("MultiHeadAttention in a functional model: config, .keras and .weights.h5 round trips", "[layers][attention]") {
  backend::clear_session();
  testing::TempDir dir("attention");
  Tensor q = layers::Input({5, 6}), v = layers::Input({4, 6});
  Tensor a = layers::MultiHeadAttention(2, 3)({q, v});
  Model model({q, v}, layers::Dense(3)(a));
  const std::vector<Tensor> x = {input_of({3, 5, 6}, 51), input_of({3, 4, 6}, 52)};
  const Tensor want = model(x);
  CHECK(want.shape() == Shape{3, 5, 3});
  // Keras's mha(query, value): the two inputs are separate positional arguments, the build shapes named.
  const std::string json = model.to_json();
  CHECK(json.find("\"build_config\":{\"shapes_dict\":{\"query_shape\":[null,5,6],\"value_shape\":[null,4,6]}}") !=
        std::string::npos);
  std::shared_ptr<Model> again = models::model_from_json(json);
  again->set_weights(model.get_weights());
  CHECK(max_abs_diff((*again)(x), want) == 0);
  CHECK(again->to_json() == json);
  model.save(dir.file("m.keras"));
  Model back = models::load_model(dir.file("m.keras"));
  CHECK(max_abs_diff(back(x), want) == 0);
  model.save_weights(dir.file("m.weights.h5"));
  again = models::model_from_json(json);
  again->load_weights(dir.file("m.weights.h5"));
  CHECK(max_abs_diff((*again)(x), want) == 0);
}

TEST_CASE("a MultiHeadAttention model saved by Keras 3 loads and predicts as Keras did", "[layers][attention][io]") {
  io::H5Group io_file = io::H5File::open_read(ckpt("attention_io.h5")).root();
  const std::vector<Tensor> x = {io_file.read_dataset("x0"), io_file.read_dataset("x1")};
  Model m = models::load_model(ckpt("attention.keras"));
  CHECK(max_abs_diff(m(x), io_file.read_dataset("y")) < 1e-5);
  // Ember writes the sublayers' groups where Keras does.
  testing::TempDir dir("attention_keras");
  m.save_weights(dir.file("m.weights.h5"));
  io::H5Group root = io::H5File::open_read(dir.file("m.weights.h5")).root();
  for (const char* g : {"layers/multi_head_attention/query_dense/vars", "layers/multi_head_attention/key_dense/vars",
                        "layers/multi_head_attention/value_dense/vars", "layers/multi_head_attention/output_dense/vars"})
    CHECK(root.has_group(g));
}
