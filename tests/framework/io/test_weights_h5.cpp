// Model::save_weights / load_weights in Keras 3's `.weights.h5` layout and the legacy tf-keras `.h5`
// layout: round trips for every layer with weights and the three model styles, optimizer state, files
// written by real Keras 3 and tf-keras (tests/fixtures/checkpoints/, make_checkpoint_fixtures.py)
// reproduced within 1e-5, the layout compared path by path with Keras's, and bad files as clear errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "framework/ember.h"
#include "framework/io/hdf5_file.h"
#include "framework/io/weights_h5.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using testing::TempDir;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

fs::path wtest_fixture(const std::string& name) {
  return testing::fixture_path("checkpoints/" + name);
}

// Gives every weight distinct deterministic values (so a load that does nothing is noticed).
void wtest_fill(Layer& model, double seed) {
  std::vector<Tensor> values;
  for (const Variable& v : model.weights()) {
    std::vector<float> data(static_cast<size_t>(v.shape().num_elements()));
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(0.5 + 0.4 * std::sin(seed + 0.37 * i + values.size()));
    values.push_back(Tensor::from_vector(data, v.shape()));
  }
  model.set_weights(values);
}

void wtest_same_weights(const Layer& a, const Layer& b) {
  std::vector<Tensor> wa = a.get_weights(), wb = b.get_weights();
  REQUIRE(wa.size() == wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    INFO("weight #" << i << " " << a.weights()[i].name());
    REQUIRE(wa[i].shape() == wb[i].shape());
    CHECK(wa[i].to_vector<float>() == wb[i].to_vector<float>());
  }
}

void wtest_close(const Tensor& got, const Tensor& want, double tol) {
  REQUIRE(got.shape() == want.shape());
  std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(w[i]).margin(tol).epsilon(tol));
}

Tensor wtest_input(const Shape& shape, uint64_t seed) { return random::uniform(shape, {.seed = seed}); }

// Saves `src` to `file`, loads into `dst` and checks weights and predictions agree.
void wtest_round_trip(Model& src, Model& dst, const std::string& file, const std::vector<Tensor>& x) {
  src.save_weights(file);
  dst.load_weights(file);
  wtest_same_weights(src, dst);
  std::vector<Tensor> a = src.call_outputs(x), b = dst.call_outputs(x);
  for (size_t i = 0; i < a.size(); ++i) wtest_close(b[i], a[i], 0);
}

// The three fixture architectures (make_checkpoint_fixtures.py).
std::shared_ptr<Model> wtest_mlp() {
  return std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({16}), layers::Dense(8, {.activation = "relu"}), layers::Dense(4)});
}
std::shared_ptr<Model> wtest_cnn() {
  return std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({12, 12, 1}), layers::Conv2D(4, 3, {.activation = "relu"}), layers::BatchNormalization(),
      layers::MaxPooling2D(), layers::Conv2D(8, 3, {.activation = "relu"}), layers::Flatten(), layers::Dropout(0.3),
      layers::Dense(10)});
}
std::shared_ptr<Model> wtest_functional() {
  Tensor a = layers::Input({6}, {.name = "in_a"});
  Tensor b = layers::Input({6}, {.name = "in_b"});
  Tensor ha = layers::Dense(8, {.activation = "relu"})(a);
  Tensor hb = layers::Dense(8, {.activation = "relu"})(b);
  Tensor s = layers::Add()({ha, hb});
  Tensor c = layers::Concatenate()({s, a});
  Tensor out = layers::Dense(3)(c);
  return std::make_shared<Model>(std::vector<Tensor>{a, b}, std::vector<Tensor>{out});
}
std::shared_ptr<Model> wtest_fixture_model(const std::string& name) {
  if (name == "mlp") return wtest_mlp();
  if (name == "cnn") return wtest_cnn();
  return wtest_functional();
}

// Every group and dataset under `g` as "path" / "path: shape dtype" lines, sorted.
void wtest_tree(const io::H5Group& g, const std::string& prefix, std::vector<std::string>& out) {
  for (const std::string& c : g.children()) {
    const std::string p = prefix + "/" + c;
    if (g.has_group(c)) {
      out.push_back(p + (g.group(c).has_attr("name") ? " [name]" : ""));
      wtest_tree(g.group(c), p, out);
    } else {
      Tensor t = g.read_dataset(c);
      std::ostringstream os;
      os << p << ": " << t.shape() << " " << t.dtype();
      out.push_back(os.str());
    }
  }
}

// A subclassed block with its own weight and two sublayers, and a subclassed model holding it, a nested
// Sequential and a Dense.
struct WtestBlock : Layer {
  EMBER_LAYER(WtestBlock)
  WtestBlock() : Layer("wtest_block", {}) {}
  layers::Dense d{3};
  layers::BatchNormalization bn;
  Variable scale;
  void build(const Shape&) override { scale = add_weight("scale", {1}, "ones"); }
  Tensor call(const Tensor& x, bool training) override { return bn(d(x), training) * read(scale); }
};
struct WtestNet : Model {
  EMBER_LAYER(WtestNet)
  WtestNet() {
    inner = std::make_shared<Sequential>(std::vector<SequentialEntry>{layers::Dense(4), layers::Dense(2)});
  }
  layers::Dense first{5};
  WtestBlock block;
  std::shared_ptr<Sequential> inner;
  Tensor call(const Tensor& x, bool training) override { return (*inner)(block(first(x), training), training); }
};

}  // namespace

TEST_CASE("save_weights/load_weights round-trip every layer with weights, both formats", "[io][h5]") {
  TempDir dir("weights_layers");
  struct Case {
    const char* what;
    Shape input;
    std::function<SequentialEntry()> layer;
    DType input_dtype = DType::Float32;
  };
  std::vector<Case> cases = {
      {"Dense", {5}, [] { return layers::Dense(3); }},
      {"Conv2D", {6, 6, 2}, [] { return layers::Conv2D(3, 3, {.padding = "same"}); }},
      {"DepthwiseConv2D", {6, 6, 2}, [] { return layers::DepthwiseConv2D(3, {.depth_multiplier = 2}); }},
      {"Conv1D", {7, 2}, [] { return layers::Conv1D(3, 3, {.padding = "causal"}); }},
      {"Conv2DTranspose", {4, 4, 2}, [] { return layers::Conv2DTranspose(3, 3, {.strides = 2}); }},
      {"SeparableConv2D", {6, 6, 2}, [] { return layers::SeparableConv2D(3, 3, {.depth_multiplier = 2}); }},
      {"Conv3D", {3, 4, 4, 2}, [] { return layers::Conv3D(3, 2, {.padding = "same"}); }},
      {"BatchNormalization", {4}, [] { return layers::BatchNormalization(); }},
      {"LayerNormalization", {4}, [] { return layers::LayerNormalization(); }},
      {"PReLU", {3, 4}, [] { return layers::PReLU({.shared_axes = {1}}); }},
      {"GroupNormalization", {3, 4}, [] { return layers::GroupNormalization({.groups = 2}); }},
      {"Embedding", {3}, [] { return layers::Embedding(10, 4); }, DType::Int32},
      {"SimpleRNN", {5, 3}, [] { return layers::SimpleRNN(4, {.return_sequences = true}); }},
      {"LSTM", {5, 3}, [] { return layers::LSTM(4); }},
      {"GRU", {5, 3}, [] { return layers::GRU(4); }},
      {"GRU reset_after=false", {5, 3}, [] { return layers::GRU(4, {.reset_after = false}); }},
      {"RNN(LSTMCell)", {5, 3}, [] { return layers::RNN(layers::LSTMCell(2)); }},
  };
  for (const Case& c : cases) {
    for (const char* ext : {".weights.h5", ".h5", ".hdf5"}) {
      INFO(c.what << " " << ext);
      Sequential src({layers::Input(c.input, {.dtype = c.input_dtype}), c.layer()});
      Sequential dst({layers::Input(c.input, {.dtype = c.input_dtype}), c.layer()});
      wtest_fill(src, 1.0);
      wtest_fill(dst, 2.0);
      std::vector<int64_t> dims{2};
      dims.insert(dims.end(), c.input.begin(), c.input.end());
      Shape batch(dims);
      Tensor x = c.input_dtype == DType::Int32 ? ops::cast(wtest_input(batch, 3) * 9.0, DType::Int32) : wtest_input(batch, 3);
      wtest_round_trip(src, dst, dir.file(std::string(c.what) + ext), {x});
    }
  }
}

TEST_CASE("save_weights/load_weights round-trip Sequential, functional and subclassed models", "[io][h5]") {
  TempDir dir("weights_models");
  for (const char* ext : {".weights.h5", ".h5"}) {
    INFO(ext);
    backend::clear_session();
    auto s1 = wtest_mlp(), s2 = wtest_mlp();
    wtest_fill(*s1, 1);
    wtest_round_trip(*s1, *s2, dir.file(std::string("seq") + ext), {wtest_input({3, 16}, 1)});

    auto f1 = wtest_functional(), f2 = wtest_functional();
    wtest_fill(*f1, 3);
    wtest_round_trip(*f1, *f2, dir.file(std::string("fun") + ext), {wtest_input({3, 6}, 2), wtest_input({3, 6}, 3)});

    // A functional model with a nested Sequential inside.
    auto nested = [] {
      Tensor in = layers::Input({4});
      auto sub = std::make_shared<Sequential>(std::vector<SequentialEntry>{layers::Input({4}), layers::Dense(3)});
      Tensor h = (*sub)(in);
      return std::make_shared<Model>(in, layers::Dense(2)(h));
    };
    auto n1 = nested(), n2 = nested();
    wtest_fill(*n1, 4);
    wtest_round_trip(*n1, *n2, dir.file(std::string("nested") + ext), {wtest_input({2, 4}, 4)});

    // Subclassed, with a sublayer-holding block, its own weight and a nested Sequential.
    WtestNet m1, m2;
    Tensor x = wtest_input({3, 7}, 5);
    m1(x);
    m2(x);
    wtest_fill(m1, 5);
    wtest_round_trip(m1, m2, dir.file(std::string("sub") + ext), {x});
  }
}

TEST_CASE("the .weights.h5 layout of nested and subclassed models follows saving_lib", "[io][h5]") {
  TempDir dir("weights_paths");
  backend::clear_session();
  WtestNet m;
  m(wtest_input({2, 7}, 1));
  m.save_weights(dir.file("net.weights.h5"));
  std::vector<std::string> tree;
  wtest_tree(io::H5File::open_read(dir.file("net.weights.h5")).root(), "", tree);
  // Each object gets <path>/vars with a "name" attribute; sublayers go under layers/<snake class>[_N];
  // a nested Sequential recurses; own variables (the block's scale) sit in the block's own vars.
  std::vector<std::string> want = {
      "/layers",
      "/layers/dense",
      "/layers/dense/vars [name]",
      "/layers/dense/vars/0: (7, 5) float32",
      "/layers/dense/vars/1: (5,) float32",
      "/layers/sequential",
      "/layers/sequential/layers",
      "/layers/sequential/layers/dense",
      "/layers/sequential/layers/dense/vars [name]",
      "/layers/sequential/layers/dense/vars/0: (3, 4) float32",
      "/layers/sequential/layers/dense/vars/1: (4,) float32",
      "/layers/sequential/layers/dense_1",
      "/layers/sequential/layers/dense_1/vars [name]",
      "/layers/sequential/layers/dense_1/vars/0: (4, 2) float32",
      "/layers/sequential/layers/dense_1/vars/1: (2,) float32",
      "/layers/sequential/vars [name]",
      "/layers/wtest_block",
      "/layers/wtest_block/layers",
      "/layers/wtest_block/layers/batch_normalization",
      "/layers/wtest_block/layers/batch_normalization/vars [name]",
      "/layers/wtest_block/layers/batch_normalization/vars/0: (3,) float32",
      "/layers/wtest_block/layers/batch_normalization/vars/1: (3,) float32",
      "/layers/wtest_block/layers/batch_normalization/vars/2: (3,) float32",
      "/layers/wtest_block/layers/batch_normalization/vars/3: (3,) float32",
      "/layers/wtest_block/layers/dense",
      "/layers/wtest_block/layers/dense/vars [name]",
      "/layers/wtest_block/layers/dense/vars/0: (5, 3) float32",
      "/layers/wtest_block/layers/dense/vars/1: (3,) float32",
      "/layers/wtest_block/vars [name]",
      "/layers/wtest_block/vars/0: (1,) float32",
      "/vars [name]",
  };
  std::ostringstream os;
  for (const auto& l : tree) os << l << "\n";
  INFO(os.str());
  CHECK(tree == want);
  CHECK(io::H5File::open_read(dir.file("net.weights.h5")).root().group("vars").attr_string("name") == m.name());
}

TEST_CASE("Ember's .weights.h5 has exactly the groups, datasets and shapes Keras 3 writes", "[io][h5]") {
  TempDir dir("weights_layout");
  for (const std::string name : {"mlp", "cnn", "functional"}) {
    INFO(name);
    auto model = wtest_fixture_model(name);
    model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "mse"});
    model->optimizer().build(model->trainable_weights());
    model->save_weights(dir.file(name + ".weights.h5"));
    std::vector<std::string> ours, keras;
    wtest_tree(io::H5File::open_read(dir.file(name + ".weights.h5")).root(), "", ours);
    wtest_tree(io::H5File::open_read(wtest_fixture(name + ".weights.h5").string()).root(), "", keras);
    CHECK(ours == keras);
  }
}

TEST_CASE("legacy .h5 weights carry Keras 3's weight names: the Sequential model's name first", "[io][h5]") {
  TempDir dir("legacy_names");
  // mlp and cnn are Sequential ("mlp/dense/kernel"), functional is not ("dense_3/kernel"): compare every
  // layer group's weight_names and datasets with the files Keras 3 wrote.
  for (const std::string name : {"mlp", "cnn", "functional"}) {
    INFO(name);
    std::shared_ptr<Model> model = std::make_shared<Model>(models::load_model(wtest_fixture(name + ".h5").string()));
    model->save_weights(dir.file(name + ".h5"));
    const io::H5Group ours = io::H5File::open_read(dir.file(name + ".h5")).root();
    const io::H5Group keras = io::H5File::open_read(wtest_fixture(name + ".h5").string()).root().group("model_weights");
    const std::vector<std::string> layers = keras.attr_strings("layer_names");
    CHECK(ours.attr_strings("layer_names") == layers);
    for (const std::string& layer : layers) {
      INFO(layer);
      const std::vector<std::string> names = keras.group(layer).attr_strings("weight_names");
      CHECK(ours.group(layer).attr_strings("weight_names") == names);
      for (const std::string& w : names) CHECK(ours.group(layer).has_dataset(w));
    }
    // Ember's own file loads back, as do Keras's (above) and tf-keras's "dense/kernel:0" names (below).
    auto again = wtest_fixture_model(name);
    again->load_weights(dir.file(name + ".h5"));
    for (size_t i = 0; i < model->weights().size(); ++i)
      CHECK(again->weights()[i].value().to_vector<float>() == model->weights()[i].value().to_vector<float>());
  }
  CHECK(io::H5File::open_read(wtest_fixture("mlp.h5").string()).root().group("model_weights").group("dense").attr_strings(
            "weight_names") == std::vector<std::string>{"mlp/dense/kernel", "mlp/dense/bias"});
}

TEST_CASE("weights written by Keras 3 and tf-keras load and reproduce Keras's predictions", "[io][h5]") {
  for (const std::string name : {"mlp", "cnn", "functional"}) {
    io::H5Group io_file = io::H5File::open_read(wtest_fixture(name + "_io.h5").string()).root();
    std::vector<Tensor> x{io_file.read_dataset("x0")};
    if (io_file.has_dataset("x1")) x.push_back(io_file.read_dataset("x1"));
    Tensor y = io_file.read_dataset("y");
    for (const std::string file : {name + ".weights.h5", name + ".h5", name + "_tfk.h5", name + "_tfk_weights.h5"}) {
      INFO(file);
      auto model = wtest_fixture_model(name);
      model->load_weights(wtest_fixture(file).string());
      wtest_close(model->call_outputs(x)[0], y, 1e-5);
    }
  }
}

TEST_CASE("Keras 3's Adam state in .weights.h5 is restored into a compiled model", "[io][h5]") {
  for (const std::string name : {"mlp", "cnn", "functional"}) {
    INFO(name);
    auto model = wtest_fixture_model(name);
    model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.5}), .loss = "mse"});
    CHECK_FALSE(model->optimizer().built());
    model->load_weights(wtest_fixture(name + ".weights.h5").string());
    optimizers::Optimizer& opt = model->optimizer();
    REQUIRE(opt.built());  // built for the trainable weights first, as Keras does
    CHECK(opt.iterations().value().item<int64_t>() == 4);  // 2 epochs of 2 batches in the script
    CHECK(opt.learning_rate() == Approx(0.01));
    io::H5Group vars = io::H5File::open_read(wtest_fixture(name + ".weights.h5").string()).root().group("optimizer/vars");
    std::vector<Variable> ov = opt.variables();
    REQUIRE(ov.size() == vars.children().size());
    for (size_t i = 2; i < ov.size(); ++i) wtest_close(ov[i].value(), vars.read_dataset(std::to_string(i)), 0);
  }
}

TEST_CASE("optimizer state round-trips: training resumes identically after load", "[io][h5]") {
  TempDir dir("weights_opt");
  Tensor x = wtest_input({8, 16}, 1), y = wtest_input({8, 4}, 2);
  auto a = wtest_mlp();
  a->compile({.optimizer = optimizers::Adam({.learning_rate = 0.02}), .loss = "mse"});
  a->train_on_batch(x, y);
  a->train_on_batch(x, y);
  a->save_weights(dir.file("a.weights.h5"));
  auto b = wtest_mlp();
  b->compile({.optimizer = optimizers::Adam({.learning_rate = 0.5}), .loss = "mse"});
  b->load_weights(dir.file("a.weights.h5"));
  CHECK(b->optimizer().iterations().value().item<int64_t>() == 2);
  CHECK(b->optimizer().learning_rate() == Approx(0.02));
  std::vector<Variable> va = a->optimizer().variables(), vb = b->optimizer().variables();
  REQUIRE(va.size() == vb.size());
  for (size_t i = 1; i < va.size(); ++i) wtest_close(vb[i].value(), va[i].value(), 0);
  wtest_same_weights(*a, *b);
  auto saved = wtest_mlp();
  saved->set_weights(a->get_weights());
  a->train_on_batch(x, y);
  b->train_on_batch(x, y);
  wtest_same_weights(*a, *b);
  // An uncompiled model ignores the optimizer state; a file without it leaves the optimizer alone.
  auto c = wtest_mlp();
  c->load_weights(dir.file("a.weights.h5"));
  wtest_same_weights(*c, *saved);
  c->save_weights(dir.file("c.weights.h5"));
  CHECK_FALSE(io::H5File::open_read(dir.file("c.weights.h5")).root().has_group("optimizer"));
  auto d = wtest_mlp();
  d->compile({.optimizer = optimizers::Adam(), .loss = "mse"});
  d->load_weights(dir.file("c.weights.h5"));
  CHECK_FALSE(d->optimizer().built());
  wtest_same_weights(*c, *d);
}

TEST_CASE("load_weights errors: missing, not HDF5, truncated, mismatched", "[io][h5]") {
  TempDir dir("weights_errors");
  backend::clear_session();
  auto model = wtest_mlp();
  CHECK_THROWS_AS(model->load_weights(dir.file("missing.weights.h5")), NotFound);
  {
    std::ofstream(dir.file("text.weights.h5")) << "not hdf5";
  }
  CHECK_THROWS_AS(model->load_weights(dir.file("text.weights.h5")), DataLoss);
  CHECK_THROWS_WITH(model->load_weights(dir.file("text.weights.h5")), Contains(dir.file("text.weights.h5")));
  model->save_weights(dir.file("ok.weights.h5"));
  model->save_weights(dir.file("ok.h5"));
  for (const char* f : {"ok.weights.h5", "ok.h5"}) {
    std::ifstream in(dir.file(f), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(dir.file(std::string("cut_") + f), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    CHECK_THROWS_AS(model->load_weights(dir.file(std::string("cut_") + f)), DataLoss);
    CHECK_THROWS_WITH(model->load_weights(dir.file(std::string("cut_") + f)), Contains(std::string("cut_") + f));
  }
  // An HDF5 file without Keras weights.
  { io::H5File::create(dir.file("empty.h5")).close(); }
  CHECK_THROWS_AS(model->load_weights(dir.file("empty.h5")), DataLoss);

  // Shape mismatch: names the layer, the weight, both shapes and the file; nothing is assigned.
  Sequential wide({layers::Input({16}), layers::Dense(9, {.activation = "relu"}), layers::Dense(4)});
  std::vector<Tensor> before = wide.get_weights();
  for (const char* f : {"ok.weights.h5", "ok.h5"}) {
    INFO(f);
    try {
      wide.load_weights(dir.file(f));
      FAIL("expected InvalidArgument");
    } catch (const InvalidArgument& e) {
      CHECK_THAT(e.what(), Contains(wide.layers()[0]->name()) && Contains("kernel") && Contains("(16, 9)") &&
                               Contains("(16, 8)") && Contains(dir.file(f)));
    }
    std::vector<Tensor> after = wide.get_weights();
    CHECK(after[0].to_vector<float>() == before[0].to_vector<float>());
    CHECK(after[2].to_vector<float>() == before[2].to_vector<float>());  // the matching layer wasn't loaded either
  }
  // Layer count mismatch: both counts.
  Sequential three({layers::Input({16}), layers::Dense(8), layers::Dense(4), layers::Dense(2)});
  CHECK_THROWS_WITH(three.load_weights(dir.file("ok.h5")), Contains("layer count mismatch") &&
                                                                 Contains("the model has 3") && Contains("the file has 2"));
  CHECK_THROWS_WITH(three.load_weights(dir.file("ok.weights.h5")), Contains("has 2 variables") && Contains("the file has 0"));

  // skip_mismatch: the mismatched weights are skipped with a warning, the rest load (the second
  // layer's kernel is (9, 4) against the file's (8, 4), its bias matches).
  wide.load_weights(dir.file("ok.h5"), {.skip_mismatch = true});
  CHECK(wide.get_weights()[0].to_vector<float>() == before[0].to_vector<float>());
  CHECK(wide.get_weights()[2].to_vector<float>() == before[2].to_vector<float>());
  CHECK(wide.get_weights()[3].to_vector<float>() == model->get_weights()[3].to_vector<float>());
  // Keras 3 layout with skip_mismatch: each mismatched layer is skipped whole.
  Sequential wide2({layers::Input({16}), layers::Dense(9, {.activation = "relu"}), layers::Dense(4)});
  std::vector<Tensor> before2 = wide2.get_weights();
  wide2.load_weights(dir.file("ok.weights.h5"), {.skip_mismatch = true});
  CHECK(wide2.get_weights()[0].to_vector<float>() == before2[0].to_vector<float>());
  CHECK(wide2.get_weights()[2].to_vector<float>() == before2[2].to_vector<float>());
  // by_name is for the legacy layout only.
  CHECK_THROWS_AS(wide.load_weights(dir.file("ok.weights.h5"), {.by_name = true}), InvalidArgument);
}

TEST_CASE("load_weights by_name matches legacy layers by name", "[io][h5]") {
  TempDir dir("weights_by_name");
  Sequential src({layers::Input({16}), layers::Dense(8, {.name = "a"}), layers::Dense(4, {.name = "b"})});
  wtest_fill(src, 7);
  src.save_weights(dir.file("src.h5"));
  // A model with an extra layer: by position the counts differ, by name a and b load and c stays.
  Sequential more({layers::Input({16}), layers::Dense(8, {.name = "a"}), layers::Dense(4, {.name = "b"}),
                   layers::Dense(2, {.name = "c"})});
  std::vector<Tensor> before = more.get_weights();
  CHECK_THROWS_AS(more.load_weights(dir.file("src.h5")), InvalidArgument);
  more.load_weights(dir.file("src.h5"), {.by_name = true});
  std::vector<Tensor> got = more.get_weights(), want = src.get_weights();
  for (size_t i = 0; i < 4; ++i) CHECK(got[i].to_vector<float>() == want[i].to_vector<float>());
  CHECK(got[4].to_vector<float>() == before[4].to_vector<float>());
  // A shape mismatch by name fails (naming both shapes) unless skip_mismatch.
  Sequential other({layers::Input({16}), layers::Dense(8, {.name = "a"}), layers::Dense(3, {.name = "b"})});
  std::vector<Tensor> before_other = other.get_weights();
  CHECK_THROWS_WITH(other.load_weights(dir.file("src.h5"), {.by_name = true}),
                    Contains("'b'") && Contains("(8, 3)") && Contains("(8, 4)"));
  CHECK(other.get_weights()[0].to_vector<float>() == before_other[0].to_vector<float>());
  other.load_weights(dir.file("src.h5"), {.by_name = true, .skip_mismatch = true});
  CHECK(other.get_weights()[0].to_vector<float>() == want[0].to_vector<float>());
  CHECK(other.get_weights()[2].to_vector<float>() == before_other[2].to_vector<float>());
}

TEST_CASE("save_weights errors: file names, overwrite, unbuilt models, missing directory", "[io][h5]") {
  TempDir dir("weights_save_errors");
  auto model = wtest_mlp();
  CHECK_THROWS_AS(model->save_weights(dir.file("w.bin")), InvalidArgument);
  CHECK_THROWS_WITH(model->save_weights(dir.file("w.keras")), Contains(".weights.h5") && Contains(".h5"));
  model->save_weights(dir.file("w.weights.h5"));
  CHECK_THROWS_AS(model->save_weights(dir.file("w.weights.h5"), {.overwrite = false}), FailedPrecondition);
  model->save_weights(dir.file("w.weights.h5"));  // overwrite defaults to true
  Sequential unbuilt;
  unbuilt.add(layers::Dense(3));
  CHECK_THROWS_AS(unbuilt.save_weights(dir.file("u.weights.h5")), FailedPrecondition);
  CHECK_THROWS_AS(unbuilt.load_weights(dir.file("w.weights.h5")), FailedPrecondition);
  CHECK_THROWS_AS(model->save_weights(dir.file("missing/w.weights.h5")), NotFound);
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) n += (e.path().filename().string()[0] == '.');
  CHECK(n == 0);  // no temporary file left behind
}

TEST_CASE("corrupted weights files give ember::Errors, never a crash", "[io][h5]") {
  TempDir dir("weights_fuzz");
  auto model = wtest_cnn();
  model->compile({.optimizer = optimizers::Adam(), .loss = "mse"});
  model->optimizer().build(model->trainable_weights());
  std::mt19937 rng(1234);
  for (const char* f : {"f.weights.h5", "f.h5"}) {
    model->save_weights(dir.file(f));
    std::ifstream in(dir.file(f), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    int errors = 0, loads = 0;
    for (int trial = 0; trial < 150; ++trial) {
      std::string bad = bytes;
      if (trial % 5 == 4) {
        bad.resize(std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng));
      } else {
        // Flip a few bytes, biased towards the metadata at the start of the file.
        int flips = 1 + trial % 3;
        for (int k = 0; k < flips; ++k) {
          size_t limit = trial % 2 ? bytes.size() : std::min<size_t>(bytes.size(), 4096);
          size_t pos = std::uniform_int_distribution<size_t>(0, limit - 1)(rng);
          bad[pos] = static_cast<char>(bad[pos] ^ (1 << std::uniform_int_distribution<int>(0, 7)(rng)));
        }
      }
      const std::string path = dir.file("bad_" + std::to_string(trial) + "_" + f);
      std::ofstream(path, std::ios::binary) << bad;
      auto target = wtest_cnn();
      target->compile({.optimizer = optimizers::Adam(), .loss = "mse"});
      try {
        target->load_weights(path);
        ++loads;
      } catch (const Error&) {
        ++errors;
      }
      fs::remove(path);
    }
    INFO(f << ": " << errors << " errors, " << loads << " loads");
    CHECK(errors > 0);
    CHECK(errors + loads == 150);
  }
}
