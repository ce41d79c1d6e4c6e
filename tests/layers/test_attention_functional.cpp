// The attention layers' keyword arguments in functional models (Keras: mha(q, v, attention_mask=m,
// use_causal_mask=True, return_attention_scores=True), Attention()([q, v], mask=[qm, vm])): recorded on the node,
// run by the model (eagerly, in fit, in traced fit), written and read as Keras 3's node "kwargs", Keras-written files
// loaded, gradients through the masks, and errors naming the layer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/io/hdf5_file.h"
#include "tests/layers/attention_testing.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using namespace ember::testing;
using namespace ember::testing::attention;
using nlohmann::json;

namespace {

// A 0/1 int32 mask, about a third of it zero, with column 0 kept (every query sees a key).
Tensor mask_of(const Shape& shape, uint32_t seed) {
  std::vector<double> v = uniform_in(shape.num_elements(), 0, 1, seed);
  const int64_t last = shape[shape.rank() - 1];
  for (size_t i = 0; i < v.size(); ++i) v[i] = (v[i] > 0.33 || static_cast<int64_t>(i) % last == 0) ? 1 : 0;
  return make(v, shape, DType::Int32);
}

// query (5, 6), value (4, 6), attention_mask (5, 4) int32 -> {Dense(mha output), scores}.
struct MaskedMha {
  std::shared_ptr<layers::MultiHeadAttention> mha = std::make_shared<layers::MultiHeadAttention>(2, 3);
  Tensor q = layers::Input({5, 6}, {.name = "query"});
  Tensor v = layers::Input({4, 6}, {.name = "value"});
  Tensor m = layers::Input({5, 4}, {.dtype = DType::Int32, .name = "attention_mask"});
  std::shared_ptr<Model> model;
  MaskedMha() {
    auto [out, scores] = mha->attend_with_scores(q, v, {.attention_mask = m, .use_causal_mask = true});
    model = std::make_shared<Model>(std::vector<Tensor>{q, v, m}, std::vector<Tensor>{layers::Dense(3)(out), scores});
  }
};

}  // namespace

TEST_CASE("MultiHeadAttention's mask, causal flag and scores in a functional model run as in a direct call",
          "[layers][attention][functional]") {
  backend::clear_session();
  MaskedMha f;
  REQUIRE(f.model->outputs().size() == 2);
  CHECK(f.model->outputs()[1].shape() == Shape{-1, 2, 5, 4});
  const std::vector<Tensor> x = {input_of({3, 5, 6}, 1), input_of({3, 4, 6}, 2), mask_of({3, 5, 4}, 3)};
  const std::vector<Tensor> y = f.model->call_outputs(x);
  auto [out, scores] = f.mha->attend_with_scores(x[0], x[1], {.attention_mask = x[2], .use_causal_mask = true});
  CHECK(max_abs_diff(y[1], scores) == 0);
  // Masked and future keys get no weight.
  const std::vector<double> s = values_as_double(y[1]), mv = values_as_double(x[2]);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = 0; j < 4; ++j)
          if (j > i || mv[static_cast<size_t>((b * 5 + i) * 4 + j)] == 0)
            CHECK(s[static_cast<size_t>(((b * 2 + h) * 5 + i) * 4 + j)] == 0);
  // The mask input changes the output; an all-ones mask is the causal mask alone.
  const Tensor ones = ops::cast(ops::ones({3, 5, 4}), DType::Int32);
  const std::vector<Tensor> y1 = f.model->call_outputs({x[0], x[1], ones});
  CHECK(max_abs_diff(y1[0], y[0]) > 1e-3);
  CHECK(max_abs_diff(y1[1], f.mha->attend_with_scores(x[0], x[1], {.use_causal_mask = true}).second) < 1e-6);
  // predict splits the batch and keeps both outputs.
  CHECK(max_abs_diff(f.model->predict_outputs(x, {.batch_size = 2, .verbose = 0})[0], y[0]) < 1e-6);
}

TEST_CASE("Attention and AdditiveAttention take mask=[query_mask, value_mask] inputs in a functional model",
          "[layers][attention][functional]") {
  backend::clear_session();
  Tensor q = layers::Input({5, 4}), v = layers::Input({3, 4});
  Tensor qm = layers::Input({5}, {.dtype = DType::Int32}), vm = layers::Input({3}, {.dtype = DType::Bool});
  auto att = std::make_shared<layers::Attention>(layers::AttentionOptions{.use_scale = true});
  auto add = std::make_shared<layers::AdditiveAttention>();
  auto [a, weights] = att->attend_with_scores({q, v}, {.query_mask = qm, .value_mask = vm});
  Tensor b = add->attend({q, v}, {.value_mask = vm, .use_causal_mask = true});
  Model model({q, v, qm, vm}, {a, weights, b});
  CHECK(model.outputs()[1].shape() == Shape{-1, 5, 3});
  const Tensor xq = input_of({2, 5, 4}, 11), xv = input_of({2, 3, 4}, 12), xqm = mask_of({2, 5}, 13);
  const Tensor xvm = ops::cast(mask_of({2, 3}, 14), DType::Bool);
  const std::vector<Tensor> y = model.call_outputs({xq, xv, xqm, xvm});
  auto [want_a, want_w] = att->attend_with_scores({xq, xv}, {.query_mask = xqm, .value_mask = xvm});
  CHECK(max_abs_diff(y[0], want_a) == 0);
  CHECK(max_abs_diff(y[1], want_w) == 0);
  CHECK(max_abs_diff(y[2], add->attend({xq, xv}, {.value_mask = xvm, .use_causal_mask = true})) == 0);
  CHECK(max_abs_diff(y[2], add->attend({xq, xv})) > 1e-3);
}

TEST_CASE("attention keyword arguments are written as Keras 3's node kwargs and read back",
          "[layers][attention][functional][io]") {
  backend::clear_session();
  MaskedMha f;
  const std::vector<Tensor> x = {input_of({3, 5, 6}, 21), input_of({3, 4, 6}, 22), mask_of({3, 5, 4}, 23)};
  const std::vector<Tensor> want = f.model->call_outputs(x);
  const json config = f.model->get_config();
  json node;
  for (const json& l : config["layers"])
    if (l["class_name"] == "MultiHeadAttention") node = l["inbound_nodes"].at(0);
  // Keras's mha(query, value, attention_mask=m, use_causal_mask=True, return_attention_scores=True).
  REQUIRE(node["args"].size() == 2);
  CHECK(node["args"][1]["config"]["keras_history"] == json::array({"value", 0, 0}));
  CHECK(node["kwargs"]["use_causal_mask"] == true);
  CHECK(node["kwargs"]["return_attention_scores"] == true);
  CHECK(node["kwargs"]["attention_mask"] ==
        json{{"class_name", "__keras_tensor__"},
             {"config", {{"shape", {nullptr, 5, 4}}, {"dtype", "int32"}, {"keras_history", {"attention_mask", 0, 0}}}}});
  CHECK(config["output_layers"] == json::parse(R"([["dense", 0, 0], ["multi_head_attention", 0, 1]])"));

  const std::string text = f.model->to_json();
  std::shared_ptr<Model> again = models::model_from_json(text);
  again->set_weights(f.model->get_weights());
  CHECK(again->to_json() == text);
  std::vector<Tensor> got = again->call_outputs(x);
  CHECK(max_abs_diff(got[0], want[0]) == 0);
  CHECK(max_abs_diff(got[1], want[1]) == 0);

  std::shared_ptr<Model> clone = models::clone_model(*f.model);
  clone->set_weights(f.model->get_weights());
  CHECK(max_abs_diff(clone->call_outputs(x)[0], want[0]) == 0);

  testing::TempDir dir("attention_kwargs");
  for (const std::string file : {"m.keras", "m.h5"}) {
    INFO(file);
    f.model->save(dir.file(file));
    Model back = models::load_model(dir.file(file));
    CHECK(max_abs_diff(back.call_outputs(x)[1], want[1]) == 0);
  }

  // Keras's mha(q, v, key=k) names the key: Ember takes it as the third input.
  json keyed = config;
  for (json& l : keyed["layers"])
    if (l["class_name"] == "MultiHeadAttention") l["inbound_nodes"][0]["kwargs"]["key"] = l["inbound_nodes"][0]["args"][1];
  std::shared_ptr<Model> with_key = std::dynamic_pointer_cast<Model>(Model::from_config(keyed));
  with_key->set_weights(f.model->get_weights());
  CHECK(max_abs_diff(with_key->call_outputs(x)[0], want[0]) == 0);

  // A keyword the layer does not take, or a flag that is not a boolean, names the layer.
  for (const auto& [key, value] : {std::pair<std::string, json>{"sliding_window", 3}, {"use_causal_mask", "yes"}}) {
    json bad = config;
    for (json& l : bad["layers"])
      if (l["class_name"] == "MultiHeadAttention") l["inbound_nodes"][0]["kwargs"][key] = value;
    CHECK_THAT(message_of<InvalidArgument>([&] { Model::from_config(bad); }),
               Catch::Contains("MultiHeadAttention 'multi_head_attention': ") && Catch::Contains(key));
  }
}

TEST_CASE("a masked attention model runs the same in fit, traced fit and eagerly", "[layers][attention][functional]") {
  auto train = [](bool run_eagerly) {
    backend::clear_session();
    MaskedMha f;
    Model model({f.q, f.v, f.m}, f.model->outputs()[0]);
    std::vector<Tensor> init;
    for (size_t i = 0; i < model.get_weights().size(); ++i)
      init.push_back(input_of(model.get_weights()[i].shape(), 100 + static_cast<uint32_t>(i)));
    model.set_weights(init);
    model.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse", .run_eagerly = run_eagerly});
    const std::vector<Tensor> x = {input_of({4, 5, 6}, 31), input_of({4, 4, 6}, 32), mask_of({4, 5, 4}, 33)};
    History h = model.fit(x, {input_of({4, 5, 3}, 34)}, {.batch_size = 2, .epochs = 3, .verbose = 0, .shuffle = false});
    return std::make_pair(h.history.at("loss"), model.get_weights());
  };
  auto [eager_loss, eager_w] = train(true);
  auto [traced_loss, traced_w] = train(false);
  REQUIRE(eager_loss.size() == 3);
  CHECK(eager_loss.back() < eager_loss.front());
  for (size_t i = 0; i < eager_loss.size(); ++i) CHECK(traced_loss[i] == Approx(eager_loss[i]).epsilon(1e-5));
  for (size_t i = 0; i < eager_w.size(); ++i) CHECK(max_abs_diff(eager_w[i], traced_w[i]) < 1e-5);
}

TEST_CASE("gradients flow through a masked functional attention model", "[layers][attention][functional][grad]") {
  backend::clear_session();
  Tensor q = layers::Input({4, 3}, {.dtype = DType::Float64}), v = layers::Input({3, 3}, {.dtype = DType::Float64});
  Tensor m = layers::Input({4, 3}, {.dtype = DType::Bool}), vm = layers::Input({3}, {.dtype = DType::Int32});
  Tensor a = layers::MultiHeadAttention(2, 2, {.dtype = "float64"}).attend(q, v, {.attention_mask = m, .use_causal_mask = true});
  Tensor b = layers::Attention({.dtype = "float64"}).attend({q, v}, {.value_mask = vm});
  // Float64 throughout, the model too (a model casts its floating inputs to its compute dtype).
  Model model({q, v, m, vm}, layers::Add({.dtype = "float64"})({a, b}), {.dtype = "float64"});
  const Tensor mask = ops::cast(mask_of({2, 4, 3}, 41), DType::Bool), value_mask = mask_of({2, 3}, 42);
  GradCheckResult r = grad_check([&](const std::vector<Tensor>& xs) { return model({xs[0], xs[1], mask, value_mask}); },
                                 {rand64({2, 4, 3}, 43), rand64({2, 3, 3}, 44)}, {.rtol = 1e-5, .atol = 1e-7});
  INFO(r.message);
  CHECK(r.ok);
}

TEST_CASE("bad attention keyword arguments are clear errors naming the layer", "[layers][attention][functional]") {
  backend::clear_session();
  Tensor q = layers::Input({5, 6}), v = layers::Input({4, 6});
  auto mha = std::make_shared<layers::MultiHeadAttention>(2, 3, layers::MultiHeadAttentionOptions{.name = "mha"});
  CHECK_THAT(message_of<InvalidArgument>([&] { mha->attend(q, v, {.attention_mask = layers::Input({4, 5})}); }),
             Catch::Contains("MultiHeadAttention 'mha': attention_mask of shape (None, 4, 5)") &&
                 Catch::Contains("(batch, query_len, key_len) = (None, 5, 4)"));
  CHECK_THAT(message_of<InvalidArgument>([&] { mha->attend(q, v, {.value_mask = layers::Input({5})}); }),
             Catch::Contains("MultiHeadAttention 'mha': value_mask of shape (None, 5)"));
  CHECK_THAT(message_of<InvalidArgument>([&] {
               mha->call_outputs({q, v}, CallKwargs().set("use_causal_mask", layers::Input({5, 4})));
             }),
             Catch::Contains("MultiHeadAttention 'mha': keyword argument use_causal_mask must be true or false"));
  CHECK_THAT(message_of<InvalidArgument>([&] { mha->call_outputs({q, v}, CallKwargs().set("attention_mask", 1)); }),
             Catch::Contains("MultiHeadAttention 'mha': keyword argument attention_mask must be a tensor"));
  CHECK_THAT(message_of<InvalidArgument>([&] { mha->call_outputs({q, v}, CallKwargs().set("mask", layers::Input({5}))); }),
             Catch::Contains("MultiHeadAttention 'mha': unexpected keyword argument mask; it takes query_mask"));
  CHECK_THAT(message_of<InvalidArgument>([&] {
               mha->attend(q, v, {.attention_mask = ops::cast(ops::ones({1, 5, 4}), DType::Bool)});
             }),
             Catch::Contains("MultiHeadAttention 'mha': keyword argument tensors must be symbolic"));
  CHECK_THAT(message_of<InvalidArgument>([&] {
               layers::Dense(2, {.name = "d"}).call_outputs({q}, CallKwargs().set("use_causal_mask", true));
             }),
             Catch::Contains("Dense 'd': unexpected keyword argument use_causal_mask; the layer takes none"));
  auto att = std::make_shared<layers::Attention>(layers::AttentionOptions{.name = "att"});
  CHECK_THAT(message_of<InvalidArgument>([&] { att->attend({q, v}, {.value_mask = layers::Input({5})}); }),
             Catch::Contains("Attention 'att': expected a value mask of shape (None, 4), got (None, 5)"));
  CHECK_THAT(message_of<InvalidArgument>([&] { att->call_outputs({q, v}, CallKwargs().set("mask", layers::Input({5}))); }),
             Catch::Contains("Attention 'att': keyword argument mask must be a list [query_mask, value_mask]"));

  // At run time, a mask input whose shape the Input left open is checked against the data.
  Tensor open_mask = layers::Input({-1, -1}, {.dtype = DType::Int32});
  Model model({q, v, open_mask}, mha->attend(q, v, {.attention_mask = open_mask}));
  CHECK_THAT(message_of<InvalidArgument>([&] {
               model({input_of({2, 5, 6}, 1), input_of({2, 4, 6}, 2), mask_of({2, 4, 4}, 3)});
             }),
             Catch::Contains("MultiHeadAttention 'mha': attention_mask of shape (2, 4, 4)"));
}

TEST_CASE("a Keras 3 model with attention masks as inputs, causal masks and scores loads and predicts as Keras did",
          "[layers][attention][functional][io]") {
  io::H5Group io_file = io::H5File::open_read(ckpt("attention_masked_io.h5")).root();
  std::vector<Tensor> x;
  for (int i = 0; i < 5; ++i) x.push_back(io_file.read_dataset("x" + std::to_string(i)));
  Model m = models::load_model(ckpt("attention_masked.keras"));
  const std::vector<Tensor> y = m.call_outputs(x);
  REQUIRE(y.size() == 3);
  for (int i = 0; i < 3; ++i) {
    INFO("output " << i);
    CHECK(max_abs_diff(y[static_cast<size_t>(i)], io_file.read_dataset("y" + std::to_string(i))) < 1e-5);
  }
  // Saved again by Ember, it reads back the same (Keras reads it too: check_keras_reads_ember_attention.py).
  testing::TempDir dir("attention_masked_keras");
  m.save(dir.file("m.keras"));
  Model back = models::load_model(dir.file("m.keras"));
  CHECK(max_abs_diff(back.call_outputs(x)[0], y[0]) == 0);
}



