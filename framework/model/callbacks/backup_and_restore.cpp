#include "framework/model/callbacks/backup_and_restore.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "framework/core/error.h"
#include "framework/distribute/worker_files.h"
#include "framework/io/atomic_file.h"
#include "framework/model/model.h"
#include "framework/ops/random.h"
#include "optimizers/optimizer.h"

namespace ember::callbacks {

namespace fs = std::filesystem;

namespace {

nlohmann::json generator_state_to_json(const random::GeneratorState& s) {
  nlohmann::json j;
  j["global_seed"] = s.global_seed ? nlohmann::json(*s.global_seed) : nlohmann::json(nullptr);
  j["op_seed_counter"] = s.op_seed_counter;
  j["next_blocks"] = s.next_blocks;
  return j;
}

random::GeneratorState generator_state_from_json(const nlohmann::json& j) {
  random::GeneratorState s;
  if (!j.at("global_seed").is_null()) s.global_seed = j.at("global_seed").get<uint64_t>();
  s.op_seed_counter = j.at("op_seed_counter").get<uint64_t>();
  s.next_blocks = j.at("next_blocks").get<std::vector<std::array<uint64_t, 3>>>();
  return s;
}

void copy_over(const std::string& from, const std::string& to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

}  // namespace

BackupAndRestore::BackupAndRestore(std::string backup_dir, BackupAndRestoreOptions options)
    : backup_dir_(std::move(backup_dir)), options_(std::move(options)) {
  EMBER_CHECK(!backup_dir_.empty(), InvalidArgument) << "BackupAndRestore: empty `backup_dir` argument passed";
  weights_path_ = (fs::path(backup_dir_) / "latest.weights.h5").string();
  metadata_path_ = (fs::path(backup_dir_) / "training_metadata.json").string();
}

void BackupAndRestore::load() {
  Model& m = *model();
  EMBER_CHECK(m.built(), FailedPrecondition)
      << "To use the BackupAndRestore callback, your model must be built before you call fit(). Model '"
      << m.name() << "' is unbuilt. You can build it beforehand by calling it on a batch of data.";
  if (fs::exists(weights_path_)) m.load_weights(weights_path_);
  if (!fs::exists(metadata_path_)) return;
  nlohmann::json meta;
  try {
    std::ifstream in(metadata_path_);
    std::stringstream text;
    text << in.rdbuf();
    meta = nlohmann::json::parse(text.str());
    m.initial_epoch_override = meta.at("epoch").get<int>();
    if (meta.contains("ember_random_state")) random::set_global_generator_state(generator_state_from_json(meta["ember_random_state"]));
    if (meta.contains("ember_data_state")) m.training_data_state_override = meta["ember_data_state"].get<std::vector<uint64_t>>();
  } catch (const nlohmann::json::exception& e) {
    EMBER_CHECK(false, DataLoss) << "BackupAndRestore: '" << metadata_path_ << "' is not valid training metadata: "
                                 << e.what();
  }
}

void BackupAndRestore::on_train_begin(const Logs&) {
  EMBER_CHECK(model(), FailedPrecondition) << "BackupAndRestore: no model (set_model was not called)";
  current_epoch_ = 0;
  last_batch_seen_ = 0;
  try {
    load();
  } catch (const DataLoss&) {
    // The latest backup is unreadable (a crash mid-write cannot cause it, but a damaged disk can): fall back
    // to the previous one when double_checkpoint kept it.
    const std::string prev_weights = weights_path_ + ".bkp", prev_meta = metadata_path_ + ".bkp";
    if (!fs::exists(prev_weights)) throw;
    copy_over(prev_weights, weights_path_);
    if (fs::exists(prev_meta))
      copy_over(prev_meta, metadata_path_);
    else
      fs::remove(metadata_path_);
    load();
  }
}

void BackupAndRestore::save() {
  // In a multi-worker job the workers other than the chief write beside it and remove what they wrote (TF's
  // BackupAndRestore does), so the backup every worker restores from is the chief's.
  const std::string weights_path = distribute::write_filepath(weights_path_);
  const std::string metadata_path = distribute::write_filepath(metadata_path_);
  fs::create_directories(fs::path(weights_path).parent_path());
  if (options_.double_checkpoint) {
    if (fs::exists(weights_path)) copy_over(weights_path, weights_path + ".bkp");
    if (fs::exists(metadata_path)) copy_over(metadata_path, metadata_path + ".bkp");
  }
  model()->save_weights(weights_path, {.overwrite = true});
  nlohmann::json meta;
  meta["epoch"] = current_epoch_;
  meta["batch"] = last_batch_seen_;
  meta["ember_random_state"] = generator_state_to_json(random::get_global_generator_state());
  meta["ember_data_state"] = model()->training_data_state;  // the dataset's shuffles at the last epoch end
  const std::string text = meta.dump();
  io::write_atomically(metadata_path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.close();
    EMBER_CHECK(out.good(), Internal) << "BackupAndRestore: writing '" << tmp << "' failed";
  });
  distribute::remove_temp_filepath(weights_path_);
}

void BackupAndRestore::on_epoch_end(int epoch, Logs&) {
  current_epoch_ = epoch + 1;
  last_batch_seen_ = 0;
  counter_.new_epoch();
  if (options_.save_freq.per_epoch()) save();
}

void BackupAndRestore::on_train_batch_end(int64_t batch, const Logs&) {
  if (counter_.should_save(batch, options_.save_freq)) {
    last_batch_seen_ = batch;
    save();
  } else if (!options_.save_freq.per_epoch()) {
    last_batch_seen_ = batch;
  }
}

void BackupAndRestore::on_train_end(const Logs&) {
  if (options_.delete_checkpoint && distribute::is_chief_worker() && fs::exists(backup_dir_)) fs::remove_all(backup_dir_);
}

}  // namespace ember::callbacks
