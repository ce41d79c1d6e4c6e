// Recurrent models in Keras's files: Python Keras 3 wrote tests/fixtures/checkpoints/rnn.{keras,h5,weights.h5}
// (make_rnn_checkpoint_fixtures.py) from a model with LSTM, GRU, SimpleRNN and RNN(GRUCell); Ember loads each
// and reproduces Keras's predictions, writes the same .weights.h5 groups (the cell's weights under
// "layers/<rnn>/cell/vars"), and reads its own files back.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/io/hdf5_file.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dir.h"

using namespace ember;

namespace {

std::string rnnck_fixture(const std::string& name) { return testing::fixture_path("checkpoints/" + name).string(); }

// The architecture of make_rnn_checkpoint_fixtures.py.
std::shared_ptr<Model> rnnck_model() {
  backend::clear_session();
  Tensor seq = layers::Input({6, 4}, {.name = "seq"});
  Tensor a = layers::LSTM(5, {.return_sequences = true})(seq);
  Tensor b = layers::GRU(4, {.reset_after = false, .go_backwards = true})(a);
  Tensor c = layers::SimpleRNN(3)(seq);
  Tensor d = layers::RNN(layers::GRUCell(2))(seq);
  Tensor out = layers::Dense(3)(layers::Concatenate()({b, c, d}));
  return std::make_shared<Model>(seq, out, ModelOptions{.name = "rnn"});
}

void rnnck_close(const Tensor& got, const Tensor& want, double tol) {
  REQUIRE(got.shape() == want.shape());
  std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(w[i]).margin(tol).epsilon(tol));
}

void rnnck_tree(const io::H5Group& g, const std::string& prefix, std::vector<std::string>& out) {
  for (const std::string& c : g.children()) {
    const std::string p = prefix + "/" + c;
    if (g.has_group(c)) {
      out.push_back(p + (g.group(c).has_attr("name") ? " [" + g.group(c).attr_string("name") + "]" : ""));
      rnnck_tree(g.group(c), p, out);
    } else {
      std::ostringstream os;
      os << p << ": " << g.read_dataset(c).shape();
      out.push_back(os.str());
    }
  }
}

}  // namespace

TEST_CASE("recurrent models saved by Keras 3 load and predict as Keras did", "[io][rnn]") {
  io::H5Group io_file = io::H5File::open_read(rnnck_fixture("rnn_io.h5")).root();
  const Tensor x = io_file.read_dataset("x0"), y = io_file.read_dataset("y");
  for (const std::string file : {"rnn.keras", "rnn.h5"}) {
    INFO(file);
    Model m = models::load_model(rnnck_fixture(file));
    rnnck_close(m.predict(x, {.verbose = 0}), y, 1e-5);
  }
  for (const std::string file : {"rnn.weights.h5", "rnn.h5"}) {
    INFO("load_weights " << file);
    auto m = rnnck_model();
    m->load_weights(rnnck_fixture(file));
    rnnck_close(m->predict(x, {.verbose = 0}), y, 1e-5);
  }
}

TEST_CASE("Ember writes a recurrent model's .weights.h5 with Keras 3's groups and names", "[io][rnn]") {
  testing::TempDir dir("rnn_weights");
  auto m = rnnck_model();
  m->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "mse"});
  m->optimizer().build(m->trainable_weights());
  m->save_weights(dir.file("rnn.weights.h5"));
  std::vector<std::string> ours, keras;
  rnnck_tree(io::H5File::open_read(dir.file("rnn.weights.h5")).root(), "", ours);
  rnnck_tree(io::H5File::open_read(rnnck_fixture("rnn.weights.h5")).root(), "", keras);
  CHECK(ours == keras);
  // The cell's variables sit in "layers/lstm/cell/vars", named by the cell.
  CHECK(std::find(ours.begin(), ours.end(), "/layers/lstm/cell/vars [lstm_cell]") != ours.end());
}

TEST_CASE("a recurrent model round-trips through .keras, .h5 and .weights.h5", "[io][rnn]") {
  testing::TempDir dir("rnn_round_trip");
  io::H5Group io_file = io::H5File::open_read(rnnck_fixture("rnn_io.h5")).root();
  const Tensor x = io_file.read_dataset("x0");
  Model keras_model = models::load_model(rnnck_fixture("rnn.keras"));
  const Tensor want = keras_model.predict(x, {.verbose = 0});
  for (const std::string file : {"m.keras", "m.h5", "m.weights.h5"}) {
    INFO(file);
    if (file == "m.weights.h5") {
      keras_model.save_weights(dir.file(file));
      auto twin = rnnck_model();
      twin->load_weights(dir.file(file));
      rnnck_close(twin->predict(x, {.verbose = 0}), want, 0);
      continue;
    }
    keras_model.save(dir.file(file));
    Model back = models::load_model(dir.file(file));
    CHECK(back.to_json() == keras_model.to_json());
    rnnck_close(back.predict(x, {.verbose = 0}), want, 0);
  }
}

TEST_CASE("an encoder-decoder saved by Keras 3 (return_state, initial_state, two outputs) loads and predicts as Keras did",
          "[io][rnn]") {
  testing::TempDir dir("seq2seq");
  io::H5Group io_file = io::H5File::open_read(rnnck_fixture("seq2seq_io.h5")).root();
  const std::vector<Tensor> x = {io_file.read_dataset("x0"), io_file.read_dataset("x1")};
  Model m = models::load_model(rnnck_fixture("seq2seq.keras"));
  std::vector<Tensor> got = m.call_outputs(x);
  REQUIRE(got.size() == 2);
  rnnck_close(got[0], io_file.read_dataset("y0"), 1e-5);
  rnnck_close(got[1], io_file.read_dataset("y1"), 1e-5);
  // Ember writes the states back as Keras does: outputs [layer, node, tensor] and the initial_state keyword.
  const std::string json = m.to_json();
  CHECK(json.find("\"output_layers\":[[\"dense\",0,0],[\"lstm\",0,2]]") != std::string::npos);
  CHECK(json.find("\"initial_state\":[{\"class_name\":\"__keras_tensor__\"") != std::string::npos);
  CHECK(json.find("\"build_config\":{\"shapes_dict\":{\"initial_state_shape\":[[null,6],[null,6]]") != std::string::npos);
  m.save(dir.file("back.keras"));
  Model back = models::load_model(dir.file("back.keras"));
  CHECK(back.to_json() == json);
  std::vector<Tensor> again = back.call_outputs(x);
  rnnck_close(again[0], got[0], 0);
  rnnck_close(again[1], got[1], 0);
}

namespace {

// The "masked" architecture of make_rnn_checkpoint_fixtures.py: padded ids, Embedding(mask_zero), Bidirectional,
// TimeDistributed and a GRU that skips the padding.
std::shared_ptr<Model> masked_model() {
  backend::clear_session();
  Tensor ids = layers::Input({5}, {.dtype = DType::Int32, .name = "ids"});
  Tensor e = layers::Embedding(7, 3, {.mask_zero = true})(ids);
  Tensor b = layers::Bidirectional(layers::LSTM(2, {.return_sequences = true}), {.merge_mode = "sum"})(e);
  Tensor t = layers::TimeDistributed(layers::Dense(3, {.activation = "tanh"}))(b);
  Tensor out = layers::Dense(1)(layers::GRU(2)(t));
  return std::make_shared<Model>(ids, out, ModelOptions{.name = "masked"});
}

}  // namespace

TEST_CASE("a masked model with Bidirectional and TimeDistributed saved by Keras 3 loads, predicts and saves as Keras",
          "[io][rnn]") {
  io::H5Group io_file = io::H5File::open_read(rnnck_fixture("masked_io.h5")).root();
  const Tensor x = io_file.read_dataset("x0"), y = io_file.read_dataset("y");
  REQUIRE(x.dtype() == DType::Int32);
  for (const std::string file : {"masked.keras", "masked.h5"}) {
    INFO(file);
    Model m = models::load_model(rnnck_fixture(file));
    rnnck_close(m.predict(x, {.verbose = 0}), y, 1e-5);
  }
  for (const std::string file : {"masked.weights.h5", "masked.h5"}) {
    INFO("load_weights " << file);
    auto m = masked_model();
    m->load_weights(rnnck_fixture(file));
    rnnck_close(m->predict(x, {.verbose = 0}), y, 1e-5);
  }
  // Ember's .weights.h5 has Keras's groups: layers/bidirectional/forward_layer/cell/vars, .../layer/vars.
  testing::TempDir dir("masked");
  auto m = masked_model();
  m->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "mse"});
  m->optimizer().build(m->trainable_weights());
  m->save_weights(dir.file("m.weights.h5"));
  std::vector<std::string> ours, keras;
  rnnck_tree(io::H5File::open_read(dir.file("m.weights.h5")).root(), "", ours);
  rnnck_tree(io::H5File::open_read(rnnck_fixture("masked.weights.h5")).root(), "", keras);
  CHECK(ours == keras);
  // And Ember's own files of the Keras model read back the same.
  Model keras_model = models::load_model(rnnck_fixture("masked.keras"));
  for (const std::string file : {"m.keras", "m.h5"}) {
    INFO(file);
    keras_model.save(dir.file(file));
    Model back = models::load_model(dir.file(file));
    CHECK(back.to_json() == keras_model.to_json());
    rnnck_close(back.predict(x, {.verbose = 0}), y, 1e-5);
  }
}
