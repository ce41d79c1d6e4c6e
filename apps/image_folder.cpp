#include "apps/image_folder.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "applications/applications.h"
#include "apps/tensorboard_flags.h"

namespace ember::image_folder_app {

namespace {

struct Flags {
  std::string directory;
  std::string model = "small_cnn";
  std::vector<int64_t> image_size = {64, 64};
  int64_t batch_size = 32;
  int epochs = 5;
  double lr = 1e-3;
  double validation_split = 0.2;
  bool augment = true;
  std::string precision = "float32";
  uint32_t seed = 42;
  std::string checkpoint;
  apps::TensorBoardFlags tensorboard;
  int verbose = 1;
};

// Wall time of each epoch, for seconds_per_epoch.
struct EpochTimer : callbacks::Callback {
  EMBER_CALLBACK(EpochTimer)
  std::chrono::steady_clock::time_point start;
  double total = 0;
  int epochs = 0;
  void on_epoch_begin(int, const Logs&) override { start = std::chrono::steady_clock::now(); }
  void on_epoch_end(int, Logs&) override {
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++epochs;
  }
  bool implements_train_batch_hooks() const override { return false; }
};

int run(const Flags& f, std::ostream& out) {
  random::set_seed(f.seed);
  mixed_precision::set_global_policy(f.precision);
  auto [train, validation] = data::image_dataset_from_directory_both(
      f.directory, {.batch_size = f.batch_size,
                    .image_size = {f.image_size[0], f.image_size[1]},
                    .seed = f.seed,
                    .validation_split = f.validation_split,
                    .subset = "both"});
  const auto num_classes = static_cast<int64_t>(train.class_names().size());
  out << "classes:";
  for (const std::string& c : train.class_names()) out << " " << c;
  out << "\n";
  Model model = make_model(f.model, Shape{f.image_size[0], f.image_size[1], 3}, num_classes, f.augment, f.seed);
  if (f.verbose > 0) model.summary();
  model.compile({.optimizer = optimizers::Adam({.learning_rate = f.lr}),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  auto timer = std::make_shared<EpochTimer>();
  std::vector<callbacks::CallbackArg> cbs = {timer};
  if (!f.checkpoint.empty())
    cbs.push_back(callbacks::ModelCheckpoint(f.checkpoint, {.verbose = f.verbose > 0 ? 1 : 0}));
  apps::add_tensorboard_callback(f.tensorboard, cbs);
  const data::Dataset train_ds = train.prefetch(data::AUTOTUNE), validation_ds = validation.prefetch(data::AUTOTUNE);
  model.fit(train_ds, {.epochs = f.epochs, .verbose = f.verbose, .callbacks = cbs, .validation_data = validation_ds});
  Logs scores = model.evaluate(validation_ds, {.verbose = 0});
  char line[160];
  std::snprintf(line, sizeof(line), "val_accuracy=%.4f val_loss=%.4f seconds_per_epoch=%.3f\n", scores.at("accuracy"),
                scores.at("loss"), timer->epochs ? timer->total / timer->epochs : 0.0);
  out << line;
  return 0;
}

}  // namespace

Model make_model(const std::string& kind, const Shape& image_shape, int64_t num_classes, bool augment, uint64_t seed) {
  Tensor inputs = layers::Input(image_shape);
  Tensor x = inputs;
  if (augment) {  // active only while training, as in Keras's image-classification examples
    x = layers::RandomFlip("horizontal", {.seed = seed})(x);
    x = layers::RandomRotation(0.1, {.seed = seed + 1})(x);
    x = layers::RandomZoom(0.1, {.seed = seed + 2})(x);
  }
  if (kind == "small_cnn") {
    x = layers::Rescaling(1.0 / 255)(x);
    for (int64_t filters : {16, 32, 64}) {
      x = layers::Conv2D(filters, 3, {.padding = "same", .activation = "relu"})(x);
      x = layers::MaxPooling2D(2)(x);
    }
    x = layers::GlobalAveragePooling2D()(x);
    x = layers::Dropout(0.2)(x);
  } else {
    x = layers::Rescaling(1.0 / 127.5, {.offset = -1})(x);
    std::shared_ptr<Model> base;
    if (kind == "mobilenet_v2")
      base = std::make_shared<Model>(
          applications::MobileNetV2({.input_shape = image_shape, .include_top = false, .pooling = "avg"}));
    else if (kind == "resnet50")
      base = std::make_shared<Model>(
          applications::ResNet50({.include_top = false, .input_shape = image_shape, .pooling = "avg"}));
    else if (kind == "vgg16")
      base = std::make_shared<Model>(
          applications::VGG16({.include_top = false, .input_shape = image_shape, .pooling = "avg"}));
    else
      throw make_error<InvalidArgument>("train_image_folder: unknown model '", kind,
                                        "'; expected small_cnn, mobilenet_v2, resnet50 or vgg16");
    x = (*base)(x);
  }
  // Logits in float32 whatever the policy, as Keras's mixed-precision guide keeps the last layer.
  Tensor outputs = layers::Dense(num_classes, {.dtype = "float32"})(x);
  return Model(inputs, outputs, {.name = kind + "_image_classifier"});
}

int train_image_folder_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"Trains an image classifier on a folder of class subfolders (PNG/JPEG files)"};
  Flags f;
  app.add_option("directory", f.directory, "The folder: one subfolder of images per class")->required();
  app.add_option("--model", f.model, "small_cnn, mobilenet_v2, resnet50 or vgg16 (fresh weights)")
      ->check(CLI::IsMember({"small_cnn", "mobilenet_v2", "resnet50", "vgg16"}))
      ->capture_default_str();
  app.add_option("--image-size", f.image_size, "HEIGHT,WIDTH every image is resized to")
      ->delimiter(',')
      ->expected(2)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch-size", f.batch_size, "Batch size")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--epochs", f.epochs, "Training epochs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--lr", f.lr, "Adam's learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--validation-split", f.validation_split, "Fraction of the images kept for validation")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_flag("--augment,!--no-augment", f.augment, "Random flips, rotations and zooms while training")
      ->capture_default_str();
  app.add_option("--precision", f.precision, "Dtype policy")
      ->check(CLI::IsMember({"float32", "mixed_float16", "mixed_bfloat16"}))
      ->capture_default_str();
  app.add_option("--seed", f.seed, "Seed of the split, shuffling, weights and augmentation")->capture_default_str();
  app.add_option("--checkpoint", f.checkpoint, "Save the model here after every epoch (.keras or .h5)");
  apps::add_tensorboard_flags(app, f.tensorboard);
  app.add_option("--verbose", f.verbose, "0 silent, 1 progress bar, 2 one line per epoch")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  }
  try {
    return run(f, out);
  } catch (const std::exception& e) {
    err << "train_image_folder: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ember::image_folder_app
