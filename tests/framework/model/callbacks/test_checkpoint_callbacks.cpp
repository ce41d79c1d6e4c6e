// ModelCheckpoint and BackupAndRestore (Keras 3 keras/src/callbacks/), run inside real fits: file names from
// the epoch and the logs, save_best_only, per-batch saving, and a resumed fit that ends bit-identical to an
// uninterrupted one.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "tests/framework/model/callbacks/callback_testing.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using namespace ember::callbacks;
using ember::testing::Capture;
using ember::testing::TempDir;
namespace fs = std::filesystem;

namespace {

struct CkData {
  Tensor x, y;
};

CkData ck_data() {
  random::set_seed(3);
  Tensor x = random::normal({40, 6});
  Tensor y = ops::cast(ops::argmax(ops::matmul(x, random::normal({6, 3})), -1), DType::Int64);
  return {x, y};
}

std::shared_ptr<Sequential> ck_model(uint64_t seed) {
  backend::clear_session();
  random::set_seed(seed);
  auto m = std::make_shared<Sequential>(std::vector<SequentialEntry>{
      layers::Input({6}), layers::Dense(16, {.activation = "relu"}), layers::Dense(3)});
  m->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
              .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
              .metrics = {"accuracy"}});
  return m;
}

std::vector<std::string> ck_files(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("ModelCheckpoint names files from the epoch and the logs", "[callbacks][checkpoint]") {
  TempDir dir("ckpt_names");
  CkData d = ck_data();
  auto m = ck_model(1);
  m->fit(d.x, d.y, {.batch_size = 10, .epochs = 3, .verbose = 0,
                    .callbacks = {ModelCheckpoint(dir.file("ckpt-{epoch:02d}-{val_loss:.2f}.weights.h5"),
                                                  {.save_weights_only = true})},
                    .validation_split = 0.25});
  std::vector<std::string> names = ck_files(dir.path());
  REQUIRE(names.size() == 3);
  CHECK(names[0].rfind("ckpt-01-", 0) == 0);
  CHECK(names[2].rfind("ckpt-03-", 0) == 0);
  // The last file holds the final weights.
  auto other = ck_model(2);
  other->load_weights(dir.file(names[2]));
  CHECK(other->get_weights()[0].to_vector<float>() == m->get_weights()[0].to_vector<float>());

  CHECK_THROWS_WITH(ModelCheckpoint(dir.file("w.h5"), {.save_weights_only = true}), Catch::Contains(".weights.h5"));
  CHECK_THROWS_WITH(ModelCheckpoint(dir.file("m.tf")), Catch::Contains(".keras"));
  CHECK_THROWS_AS(ModelCheckpoint(dir.file("m.keras"), {.save_freq = "batch"}), InvalidArgument);
  auto bad = ck_model(1);
  CHECK_THROWS_WITH(bad->fit(d.x, d.y, {.batch_size = 10, .epochs = 1, .verbose = 0,
                                        .callbacks = {ModelCheckpoint(dir.file("{val_acc}.keras"))}}),
                    Catch::Contains("Failed to format this callback filepath"));
}

TEST_CASE("ModelCheckpoint save_best_only saves on improvement only, full models loadable", "[callbacks][checkpoint]") {
  TempDir dir("ckpt_best");
  auto m = ck_model(1);
  ModelCheckpoint cb(dir.file("best.keras"), {.monitor = "val_loss", .verbose = 1, .save_best_only = true});
  cb.set_model(m.get());
  cb.on_train_begin({});
  Capture out(std::cout);
  std::vector<double> losses = {1.0, 0.5, 0.7, 0.4};
  std::vector<bool> saved;
  for (int e = 0; e < 4; ++e) {
    fs::remove(dir.file("best.keras"));
    Logs logs{{"loss", 1.0}, {"val_loss", losses[e]}};
    cb.on_epoch_begin(e, {});
    cb.on_epoch_end(e, logs);
    saved.push_back(fs::exists(dir.file("best.keras")));
  }
  CHECK(saved == std::vector<bool>{true, true, false, true});
  CHECK_THAT(out.str(), Catch::Contains("Epoch 2: val_loss improved from 1.00000 to 0.50000, saving model to "));
  CHECK_THAT(out.str(), Catch::Contains("Epoch 3: val_loss did not improve from 0.50000"));
  CHECK(*cb.best() == 0.4);
  Model back = models::load_model(dir.file("best.keras"));
  CHECK(back.compiled());

  // initial_value_threshold: the first value must beat it.
  ModelCheckpoint thr(dir.file("thr.keras"), {.save_best_only = true, .initial_value_threshold = 0.3});
  thr.set_model(m.get());
  Logs logs{{"val_loss", 0.4}};
  thr.on_epoch_end(0, logs);
  CHECK_FALSE(fs::exists(dir.file("thr.keras")));
}

TEST_CASE("ModelCheckpoint save_freq counts batches across epochs", "[callbacks][checkpoint]") {
  TempDir dir("ckpt_freq");
  CkData d = ck_data();
  auto m = ck_model(1);
  // 4 batches per epoch, 2 epochs, every 3 batches: after batches 3 (epoch 1) and 6 (epoch 2, batch 2).
  m->fit(d.x, d.y, {.batch_size = 10, .epochs = 2, .verbose = 0,
                    .callbacks = {ModelCheckpoint(dir.file("e{epoch}-b{batch}.weights.h5"),
                                                  {.save_weights_only = true, .save_freq = 3})}});
  CHECK(ck_files(dir.path()) == std::vector<std::string>{"e1-b3.weights.h5", "e2-b2.weights.h5"});
}

TEST_CASE("BackupAndRestore resumes an interrupted fit bit-identically", "[callbacks][checkpoint][resume]") {
  TempDir dir("backup");
  CkData d = ck_data();
  const FitOptions base{.batch_size = 8, .epochs = 5, .verbose = 0, .shuffle = true};

  // Uninterrupted: 5 epochs.
  auto full = ck_model(1);
  random::set_seed(100);
  FitOptions o = base;
  full->fit(d.x, d.y, o);

  // Interrupted after 2 epochs (the process "dies": the backup stays), then a new model resumes.
  auto first = ck_model(1);
  random::set_seed(100);
  o = base;
  o.epochs = 2;
  o.callbacks = {BackupAndRestore(dir.file("backup"), {.delete_checkpoint = false})};
  first->fit(d.x, d.y, o);
  REQUIRE(fs::exists(dir.file("backup/latest.weights.h5")));
  {
    std::ifstream meta(dir.file("backup/training_metadata.json"));
    std::string text((std::istreambuf_iterator<char>(meta)), {});
    CHECK_THAT(text, Catch::Contains("\"epoch\":2"));
  }

  auto resumed = ck_model(7);  // other initial weights, other random state: all restored from the backup
  random::set_seed(999);
  History h;
  o = base;
  o.callbacks = {BackupAndRestore(dir.file("backup"))};
  h = resumed->fit(d.x, d.y, o);
  CHECK(h.epoch == std::vector<int>{2, 3, 4});
  CHECK(resumed->optimizer().iterations().value().item<int64_t>() == full->optimizer().iterations().value().item<int64_t>());
  std::vector<Tensor> a = full->get_weights(), b = resumed->get_weights();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].to_vector<float>() == b[i].to_vector<float>());
  // Training finished: the backup is gone.
  CHECK_FALSE(fs::exists(dir.file("backup")));
}

TEST_CASE("BackupAndRestore resumes a fit on a shuffled Dataset bit-identically", "[callbacks][checkpoint][resume]") {
  TempDir dir("backup_dataset");
  CkData d = ck_data();
  // A restarted process builds its pipeline anew: the shuffle's passes come from the backup.
  auto pipeline = [&] { return data::Dataset::from_tensor_slices({d.x, d.y}).shuffle(40, {.seed = 11}).batch(8); };
  auto full = ck_model(1);
  full->fit(pipeline(), {.epochs = 4, .verbose = 0});

  auto first = ck_model(1);
  first->fit(pipeline(), {.epochs = 2, .verbose = 0,
                          .callbacks = {BackupAndRestore(dir.file("backup"), {.delete_checkpoint = false})}});
  {
    std::ifstream meta(dir.file("backup/training_metadata.json"));
    std::string text((std::istreambuf_iterator<char>(meta)), {});
    CHECK_THAT(text, Catch::Contains("\"ember_data_state\":[2]"));
  }
  auto resumed = ck_model(7);
  History h = resumed->fit(pipeline(), {.epochs = 4, .verbose = 0, .callbacks = {BackupAndRestore(dir.file("backup"))}});
  CHECK(h.epoch == std::vector<int>{2, 3});
  std::vector<Tensor> a = full->get_weights(), b = resumed->get_weights();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].to_vector<float>() == b[i].to_vector<float>());

  // Without the dataset's state the resumed epochs would see the first epochs' orders: not identical.
  auto naive = ck_model(1);
  naive->fit(pipeline(), {.epochs = 2, .verbose = 0});
  naive->fit(pipeline(), {.epochs = 4, .verbose = 0, .initial_epoch = 2});
  CHECK(naive->get_weights()[0].to_vector<float>() != full->get_weights()[0].to_vector<float>());
}

TEST_CASE("BackupAndRestore falls back to the previous backup when the latest is damaged", "[callbacks][checkpoint]") {
  TempDir dir("backup_double");
  CkData d = ck_data();
  auto m = ck_model(1);
  FitOptions o{.batch_size = 10, .epochs = 2, .verbose = 0};
  o.callbacks = {BackupAndRestore(dir.file("b"), {.double_checkpoint = true, .delete_checkpoint = false})};
  m->fit(d.x, d.y, o);
  REQUIRE(fs::exists(dir.file("b/latest.weights.h5.bkp")));
  {
    std::ofstream(dir.file("b/latest.weights.h5"), std::ios::trunc) << "garbage";
  }
  auto again = ck_model(2);
  o.epochs = 3;
  o.callbacks = {BackupAndRestore(dir.file("b"), {.double_checkpoint = true, .delete_checkpoint = false})};
  History h = again->fit(d.x, d.y, o);
  CHECK(h.epoch == std::vector<int>{1, 2});  // the previous backup was written after epoch 1

  CHECK_THROWS_AS(BackupAndRestore(""), InvalidArgument);
}
