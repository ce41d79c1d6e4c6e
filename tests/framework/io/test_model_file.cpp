// Model::save / models::load_model: Keras 3 `.keras` archives and legacy `.h5` full-model files, written by
// real Keras 3 and tf-keras (tests/fixtures/checkpoints/, make_checkpoint_fixtures.py) and reproduced
// within 1e-5; Ember's own files round-trip with the compiled optimizer and its state; bad files are clear
// errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>

#include "framework/ember.h"
#include "framework/io/hdf5_file.h"
#include "framework/io/model_file.h"
#include "framework/io/zip_archive.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using testing::TempDir;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

std::string mf_fixture(const std::string& name) {
  return testing::fixture_path("checkpoints/" + name).string();
}

// The fixture's input batch and Keras's predictions for it.
struct MfBatch {
  std::vector<Tensor> x;
  Tensor y;
};

MfBatch mf_io(const std::string& model_name) {
  io::H5File f = io::H5File::open_read(mf_fixture(model_name + "_io.h5"));
  MfBatch b;
  for (int i = 0; f.root().has_dataset("x" + std::to_string(i)); ++i) b.x.push_back(f.root().read_dataset("x" + std::to_string(i)));
  b.y = f.root().read_dataset("y");
  return b;
}

Tensor mf_predict(Model& m, const std::vector<Tensor>& x) { return m.predict_outputs(x, {.verbose = 0})[0]; }

double mf_max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  auto va = a.to_vector<float>(), vb = b.to_vector<float>();
  double d = 0;
  for (size_t i = 0; i < va.size(); ++i) d = std::max(d, static_cast<double>(std::abs(va[i] - vb[i])));
  return d;
}

int64_t mf_iterations(const Model& m) { return m.optimizer().iterations().value().item<int64_t>(); }

}  // namespace

TEST_CASE("load_model reproduces files written by Keras 3 and tf-keras", "[io][model_file]") {
  for (const std::string name : {"mlp", "cnn", "functional"}) {
    const MfBatch io = mf_io(name);
    for (const std::string suffix : {".keras", ".h5", "_tfk.h5"}) {
      INFO(name + suffix);
      Model m = models::load_model(mf_fixture(name + suffix));
      CHECK(m.name() == name);
      CHECK(mf_max_diff(mf_predict(m, io.x), io.y) < 1e-5);
      REQUIRE(m.compiled());
      // Keras 3 trained 2 epochs of 2 batches and saved the Adam state; tf-keras's copy was never trained.
      CHECK(mf_iterations(m) == (suffix == "_tfk.h5" ? 0 : 4));
      CHECK(m.optimizer().class_name() == "Adam");
      CHECK(m.optimizer().learning_rate() == Approx(0.01));
    }
  }
}

TEST_CASE("load_model with compile = false leaves the model uncompiled", "[io][model_file]") {
  Model m = models::load_model(mf_fixture("mlp.keras"), {.compile = false});
  CHECK_FALSE(m.compiled());
  Model h = models::load_model(mf_fixture("mlp.h5"), {.compile = false});
  CHECK_FALSE(h.compiled());
}

TEST_CASE("Ember's .keras and .h5 files round-trip the model, the compile config and the optimizer state",
          "[io][model_file]") {
  TempDir dir("model_file");
  for (const std::string name : {"mlp", "cnn", "functional"}) {
    const MfBatch io = mf_io(name);
    Model original = models::load_model(mf_fixture(name + ".keras"));
    for (const std::string ext : {".keras", ".h5"}) {
      INFO(name + ext);
      const std::string path = dir.file(name + ext);
      original.save(path);
      Model back = models::load_model(path);
      CHECK(back.class_name() == original.class_name());
      CHECK(back.name() == original.name());
      CHECK(mf_max_diff(mf_predict(back, io.x), mf_predict(original, io.x)) == 0);
      REQUIRE(back.compiled());
      CHECK(back.get_compile_config()["loss"] == original.get_compile_config()["loss"]);
      std::vector<Variable> a = original.optimizer().variables(), b = back.optimizer().variables();
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        INFO(a[i].name());
        CHECK(mf_max_diff(ops::cast(a[i].value(), DType::Float32), ops::cast(b[i].value(), DType::Float32)) == 0);
      }
      // Training continues identically from the original and from the reloaded model.
      std::vector<Tensor> y = {name == "functional" ? random::normal({4, 3}, {.seed = 5})
                                                    : Tensor::from_vector<int64_t>({1, 0, 3, 2}, {4})};
      original.save(dir.file("before" + ext));
      Model twin = models::load_model(dir.file("before" + ext));
      // The CNN's Dropout draws from the global generator: both steps start from the same state.
      random::set_seed(21);
      original.train_on_batch(io.x, y);
      random::set_seed(21);
      twin.train_on_batch(io.x, y);
      CHECK(mf_max_diff(mf_predict(twin, io.x), mf_predict(original, io.x)) == 0);
    }
  }
}

TEST_CASE("include_optimizer = false writes an .h5 without training state", "[io][model_file]") {
  TempDir dir("model_file_noopt");
  Model m = models::load_model(mf_fixture("mlp.keras"));
  m.save(dir.file("m.h5"), {.include_optimizer = false});
  io::H5File f = io::H5File::open_read(dir.file("m.h5"));
  CHECK_FALSE(f.root().has_attr("training_config"));
  CHECK_FALSE(f.root().has_group("optimizer_weights"));
  CHECK_FALSE(models::load_model(dir.file("m.h5")).compiled());
}

TEST_CASE("save and load_model refuse what they cannot do, with clear errors", "[io][model_file]") {
  TempDir dir("model_file_errors");
  Model m = models::load_model(mf_fixture("mlp.keras"));
  CHECK_THROWS_WITH(m.save(dir.file("m.txt")), Contains("`.keras`"));
  m.save(dir.file("m.keras"));
  CHECK_THROWS_AS(m.save(dir.file("m.keras"), {.overwrite = false}), FailedPrecondition);

  struct Sub : Model {
    layers::Dense d{2};
    Tensor call(const Tensor& x, bool) override { return d(x); }
  };
  Sub sub;
  sub(Tensor::from_vector<float>({1, 2}, {1, 2}));
  CHECK_THROWS_AS(sub.save(dir.file("sub.keras")), Unimplemented);

  CHECK_THROWS_AS(models::load_model(dir.file("missing.keras")), NotFound);
  {
    std::ofstream(dir.file("text.h5")) << "not a model";
  }
  CHECK_THROWS_WITH(models::load_model(dir.file("text.h5")), Contains("text.h5"));
  CHECK_THROWS_AS(models::load_model(dir.file("text.h5")), DataLoss);
  // Truncated archives and HDF5 files.
  for (const std::string src : {mf_fixture("mlp.keras"), mf_fixture("mlp.h5")}) {
    const std::string cut = dir.file("cut" + fs::path(src).extension().string());
    fs::copy_file(src, cut, fs::copy_options::overwrite_existing);
    fs::resize_file(cut, fs::file_size(cut) / 2);
    CHECK_THROWS_AS(models::load_model(cut), DataLoss);
  }
  // A weights-only file has no architecture.
  CHECK_THROWS_WITH(models::load_model(mf_fixture("mlp_tfk_weights.h5")), Contains("weights-only"));
  // A file from a newer Keras says so.
  auto entries = io::read_zip(mf_fixture("mlp.keras"));
  entries["metadata.json"] = R"({"keras_version": "4.0.0", "date_saved": "2030-01-01@00:00:00"})";
  io::write_zip(dir.file("future.keras"), {{"metadata.json", entries["metadata.json"]},
                                           {"config.json", entries["config.json"]},
                                           {"model.weights.h5", entries["model.weights.h5"]}});
  CHECK_THROWS_WITH(models::load_model(dir.file("future.keras")), Contains("4.0.0"));
  CHECK_THROWS_AS(models::load_model(dir.file("future.keras")), Unimplemented);
}

TEST_CASE("load_model survives damaged bytes: errors only, never a crash", "[io][model_file][fuzz]") {
  TempDir dir("model_file_fuzz");
  std::mt19937 rng(11);
  for (const std::string src : {mf_fixture("mlp.keras"), mf_fixture("mlp.h5")}) {
    std::string bytes;
    {
      std::ifstream in(src, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    for (int round = 0; round < 40; ++round) {
      std::string damaged = bytes;
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < flips; ++k) damaged[rng() % damaged.size()] ^= static_cast<char>(1 + rng() % 255);
      if (round % 4 == 3) damaged.resize(rng() % damaged.size());
      const std::string path = dir.file("fuzz" + fs::path(src).extension().string());
      std::ofstream(path, std::ios::binary).write(damaged.data(), static_cast<std::streamsize>(damaged.size()));
      try {
        Model m = models::load_model(path);
        (void)m;  // a flip in unused bytes may leave a loadable file
      } catch (const Error&) {
      }
    }
  }
}

TEST_CASE("describe_model_file shows the format, the model and the weights tree (ember_h5 inspect)", "[io][model_file]") {
  for (const std::string name : {"mlp.keras", "mlp.h5", "mlp_tfk.h5"}) {
    INFO(name);
    std::ostringstream os;
    io::describe_model_file(mf_fixture(name), os);
    const std::string text = os.str();
    CHECK_THAT(text, Contains(name[4] == 'k' ? "Keras 3 archive" : "legacy Keras full-model HDF5"));
    CHECK_THAT(text, Contains("Total params: 172"));  // 16*8+8 + 8*4+4
    CHECK_THAT(text, Contains("float32 (16, 8)"));
    CHECK_THAT(text, Contains("float32 (8, 4)"));
  }
  std::ostringstream os;
  io::describe_model_file(mf_fixture("mlp.weights.h5"), os);
  CHECK_THAT(os.str(), Contains("Keras 3 weights (.weights.h5), no architecture"));
  CHECK_THAT(os.str(), Contains("optimizer/"));
  CHECK_THAT(os.str(), !Contains("Total params"));
  CHECK_THROWS_AS(io::describe_model_file(mf_fixture("missing.h5"), os), NotFound);
}

TEST_CASE("convert_model_file moves a model between the three formats (ember_h5 convert)", "[io][model_file]") {
  TempDir dir("model_convert");
  const MfBatch io = mf_io("functional");
  Model original = models::load_model(mf_fixture("functional_tfk.h5"));
  io::convert_model_file(mf_fixture("functional_tfk.h5"), dir.file("a.keras"));
  io::convert_model_file(dir.file("a.keras"), dir.file("b.h5"));
  io::convert_model_file(dir.file("b.h5"), dir.file("c.weights.h5"));
  Model back = models::load_model(dir.file("b.h5"));
  CHECK(mf_max_diff(mf_predict(back, io.x), mf_predict(original, io.x)) == 0);
  Model fresh = models::load_model(mf_fixture("functional.keras"));
  fresh.load_weights(dir.file("c.weights.h5"));
  CHECK(mf_max_diff(mf_predict(fresh, io.x), mf_predict(original, io.x)) == 0);
  CHECK_THROWS_WITH(io::convert_model_file(mf_fixture("mlp_tfk_weights.h5"), dir.file("d.keras")),
                    Contains("weights only"));
  CHECK_THROWS_AS(io::convert_model_file(dir.file("a.keras"), dir.file("b.h5"), /*overwrite=*/false), FailedPrecondition);
}

TEST_CASE("a model holding every layer class round-trips through all three formats", "[io][model_file]") {
  TempDir dir("every_layer");
  backend::clear_session();
  random::set_seed(31);
  Tensor image = layers::Input({8, 8, 3}, {.name = "image"});
  Tensor tokens = layers::Input({5}, {.dtype = DType::Int32, .name = "tokens"});
  Tensor h = layers::ZeroPadding2D(1)(image);                                         // 10x10x3
  h = layers::Conv2D(4, 3, {.activation = "relu"})(h);                                // 8x8x4
  h = layers::DepthwiseConv2D(3, {.padding = "same"})(h);
  h = layers::BatchNormalization()(h);
  h = layers::ReLU()(h);
  Tensor pooled = layers::MaxPooling2D()(h);                                          // 4x4x4
  Tensor avg = layers::Flatten()(layers::AveragePooling2D()(pooled));                 // 16
  Tensor gap = layers::GlobalAveragePooling2D()(pooled), gmp = layers::GlobalMaxPooling2D()(pooled);
  Tensor merged = layers::Add()({gap, gmp});
  merged = layers::Subtract()({merged, layers::Multiply()({gap, gmp})});
  merged = layers::Average()({merged, gap});                                          // 4
  Tensor seq = layers::Conv1D(3, 3, {.padding = "causal"})(layers::Reshape({16, 4})(pooled));  // 16x3
  Tensor seq_avg = layers::GlobalAveragePooling1D()(layers::AveragePooling1D(2)(layers::MaxPooling1D()(seq)));  // 3
  Tensor seq_max = layers::GlobalMaxPooling1D()(seq);                                 // 3
  Tensor up = layers::UpSampling2D(2, {.interpolation = "bilinear"})(pooled);         // 8x8x4
  up = layers::Conv2DTranspose(2, 3, {.strides = 2, .padding = "same"})(up);          // 16x16x2
  up = layers::SeparableConv2D(2, 3, {.depth_multiplier = 2})(layers::Cropping2D(2)(up));  // 10x10x2
  Tensor up_avg = layers::GlobalAveragePooling2D()(up);                               // 2
  Tensor vol = layers::Conv3D(2, 2, {.padding = "same"})(layers::Reshape({2, 2, 4, 4})(pooled));  // 2x2x4x2
  Tensor embedded = layers::Embedding(10, 2)(tokens);                                 // 5x2
  Tensor emb = layers::Flatten()(embedded);                                           // 10
  // The recurrent layers over the embedded tokens, and the cells on their own ({input, states...}).
  Tensor lstm = layers::LSTM(3, {.return_sequences = true})(embedded);                // 5x3
  Tensor gru = layers::GRU(3, {.reset_after = false})(lstm);                          // 3
  Tensor simple = layers::SimpleRNN(3, {.go_backwards = true})(embedded);             // 3
  Tensor rnn = layers::RNN(layers::GRUCell(3))(embedded);                             // 3
  // Masking, and the sequence wrappers over it.
  Tensor wrapped = layers::Bidirectional(layers::LSTM(2, {.return_sequences = true}))(layers::Masking()(embedded));
  wrapped = layers::Flatten()(layers::TimeDistributed(layers::Dense(1))(wrapped));    // 5
  Tensor cell = layers::SimpleRNNCell(3)({gru, simple});
  cell = layers::LSTMCell(3)({cell, rnn, gru});
  cell = layers::GRUCell(3)({cell, simple});                                          // 3
  // The attention layers over the recurrent sequences.
  Tensor att = layers::MultiHeadAttention(2, 2)({lstm, embedded});                   // 5x3
  att = layers::Attention({.use_scale = true})({att, lstm});
  att = layers::GlobalAveragePooling1D()(layers::AdditiveAttention()({att, lstm, att}));  // 3
  Tensor all = layers::Concatenate()({merged, avg, emb, seq_avg, seq_max, up_avg, layers::Flatten()(vol), cell, att, wrapped});  // 81
  all = layers::LayerNormalization()(layers::Activation("tanh")(all));
  all = layers::Dropout(0.3)(layers::Dense(6)(all));
  // Keras 3's simple layers (the noise layers are the identity in predict); each group keeps `all` at 6 wide.
  all = layers::ELU()(layers::LeakyReLU()(layers::Identity()(all)));
  all = layers::Dense(6)(layers::Concatenate()(
      {all, layers::Flatten()(layers::PReLU({.alpha_initializer = "random_uniform", .shared_axes = {1, 2}})(pooled))}));
  all = layers::ActivityRegularization({.l2 = 0.01})(layers::GaussianDropout(0.1)(layers::GaussianNoise(0.1)(all)));
  all = layers::Dense(6)(layers::Concatenate()({all, layers::Flatten()(layers::SpatialDropout2D(0.2)(pooled))}));
  all = layers::Dense(6)(
      layers::Concatenate()({all, layers::Flatten()(layers::GroupNormalization({.groups = 2})(pooled))}));
  Tensor repeated = layers::Permute({2, 1})(layers::RepeatVector(3)(gap));  // 4x3
  all = layers::Dense(6)(layers::Concatenate()({all, layers::Flatten()(layers::Dot(1)({repeated, repeated})),
                                                layers::Maximum()({merged, gap}), layers::Minimum()({merged, gap})}));
  // The preprocessing and augmentation layers (the random ones are the identity in predict; RandomCrop's window
  // is the whole image, so its output keeps the shape at inference too).
  Tensor aug = layers::Normalization()(layers::Rescaling(0.5, {.offset = 0.1})(pooled));  // 4x4x4
  aug = layers::RandomTranslation(0.1, 0.1)(layers::RandomZoom(0.1)(layers::RandomRotation(0.1)(layers::RandomFlip()(aug))));
  aug = layers::RandomBrightness(0.1, {.value_range = {-10, 10}})(
      layers::RandomContrast(0.2)(layers::RandomCrop(4, 4, {.seed = 1})(aug)));
  aug = layers::CenterCrop(2, 2)(layers::Resizing(3, 5)(aug));  // 2x2x4
  all = layers::Dense(6)(layers::Concatenate()({all, layers::Flatten()(aug)}));
  all = layers::Flatten()(layers::Reshape({2, 3})(all));
  Tensor out = layers::Softmax()(layers::Dense(3)(all));
  Model original({image, tokens}, {out}, {.name = "every_layer"});
  original.compile({.optimizer = optimizers::Adam(), .loss = "sparse_categorical_crossentropy"});

  // The model must use every registered layer class, so that a new one joins this test.
  std::set<std::string> used;
  for (const LayerPtr& l : original.layers()) used.insert(l->class_name());
  for (const std::string& cls : registered_layers())
    // The models themselves; and Lambda, whose C++ function cannot be saved (tests/layers/test_lambda.cpp).
    if (cls != "Sequential" && cls != "Functional" && cls != "Model" && cls != "Lambda") {
      INFO(cls);
      CHECK(used.count(cls) == 1);
    }

  const std::vector<Tensor> x = {random::normal({4, 8, 8, 3}, {.seed = 2}),
                                 Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0}, {4, 5})};
  const Tensor y = Tensor::from_vector<int64_t>({0, 1, 2, 1}, {4});
  original.train_on_batch(x, {y});  // optimizer state and moved BatchNormalization statistics
  const Tensor expected = mf_predict(original, x);
  for (const std::string file : {"m.keras", "m.h5", "m.weights.h5"}) {
    INFO(file);
    const std::string path = dir.file(file);
    if (file == "m.weights.h5") {
      original.save_weights(path);
      std::shared_ptr<Model> twin = models::model_from_json(original.to_json());
      twin->compile({.optimizer = optimizers::Adam(), .loss = "sparse_categorical_crossentropy"});
      twin->load_weights(path);
      CHECK(mf_max_diff(mf_predict(*twin, x), expected) == 0);
      CHECK(mf_iterations(*twin) == 1);
      continue;
    }
    original.save(path);
    Model back = models::load_model(path);
    CHECK(back.to_json() == original.to_json());
    CHECK(mf_max_diff(mf_predict(back, x), expected) == 0);
    CHECK(mf_iterations(back) == 1);
  }
}

TEST_CASE("messages about files name the user's file and say what to do", "[io][model_file]") {
  TempDir dir("model_file_messages");
  const auto entries = io::read_zip(mf_fixture("mlp.keras"));
  auto archive_with = [&](const std::string& name, const nlohmann::json& config, const std::string& weights) {
    io::write_zip(dir.file(name), {{"metadata.json", entries.at("metadata.json")},
                                   {"config.json", config.dump()},
                                   {"model.weights.h5", weights}});
    return dir.file(name);
  };
  const nlohmann::json config = nlohmann::json::parse(entries.at("config.json"));

  // load_weights on a whole-model archive points at load_model.
  Model m = models::load_model(mf_fixture("mlp.keras"));
  CHECK_THROWS_AS(m.load_weights(mf_fixture("mlp.keras")), InvalidArgument);
  CHECK_THROWS_WITH(m.load_weights(mf_fixture("mlp.keras")),
                    Contains("is a .keras archive") && Contains("models::load_model(\"" + mf_fixture("mlp.keras") + "\")"));

  // Warnings and errors about an archive's weights name the archive, never the scratch copy they are read from.
  nlohmann::json sgd = config;
  sgd["compile_config"]["optimizer"] = {{"module", "keras.optimizers"}, {"class_name", "SGD"},
                                        {"config", {{"name", "SGD"}, {"learning_rate", 0.01}}},
                                        {"registered_name", nullptr}};
  const std::string with_sgd = archive_with("sgd.keras", sgd, entries.at("model.weights.h5"));
  std::ostringstream captured;
  std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
  try {
    models::load_model(with_sgd);
  } catch (...) {
    std::cerr.rdbuf(old);
    throw;
  }
  std::cerr.rdbuf(old);
  CHECK_THAT(captured.str(), Contains("[warning]") && Contains(with_sgd) && !Contains("ember-scratch"));

  const std::string garbage = archive_with("garbage.keras", config, "not hdf5 at all");
  CHECK_THROWS_AS(models::load_model(garbage), DataLoss);
  CHECK_THROWS_WITH(models::load_model(garbage), Contains(garbage + " (model.weights.h5)") && !Contains("ember-scratch"));
  nlohmann::json wider = config;
  for (auto& layer : wider["config"]["layers"])
    if (layer["class_name"] == "Dense") {
      layer["config"]["units"] = layer["config"]["units"].get<int>() + 1;
      break;
    }
  const std::string mismatched = archive_with("wider.keras", wider, entries.at("model.weights.h5"));
  CHECK_THROWS_WITH(models::load_model(mismatched), Contains(mismatched) && !Contains("ember-scratch"));

  // A malformed config names the file it came from.
  nlohmann::json unknown = config;
  unknown["config"]["layers"][1]["class_name"] = "NoSuchLayer";
  const std::string bad = archive_with("unknown_layer.keras", unknown, entries.at("model.weights.h5"));
  CHECK_THROWS_WITH(models::load_model(bad), Contains("load_model: '" + bad + "'") && Contains("NoSuchLayer"));
}
