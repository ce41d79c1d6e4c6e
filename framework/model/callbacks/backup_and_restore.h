#pragma once
// BackupAndRestore (Keras 3: keras/src/callbacks/backup_and_restore.py): backs up the weights, optimizer
// state and training position to a directory so that a fit interrupted by a crash continues, when run
// again with the same callback, from the last backup instead of from scratch.
#include <string>

#include "framework/model/callbacks/callback.h"
#include "framework/model/callbacks/model_checkpoint.h"

namespace ember::callbacks {

struct BackupAndRestoreOptions {
  SaveFreq save_freq = "epoch";     // back up after every epoch, or every N batches
  bool double_checkpoint = false;   // keep the previous backup too (".bkp"), used when the latest is unreadable
  bool delete_checkpoint = true;    // remove the backup directory when training completes
};

class BackupAndRestore : public Callback {
  EMBER_CALLBACK(BackupAndRestore)
 public:
  // backup_dir: where "latest.weights.h5" (weights and optimizer state, Keras 3 layout) and
  // "training_metadata.json" ({"epoch", "batch"} as Keras writes it, plus Ember's random generator
  // state and the training dataset's shuffle state) are kept. An empty path is InvalidArgument.
  explicit BackupAndRestore(std::string backup_dir, BackupAndRestoreOptions options = {});

  // Restores the last backup, if any: weights, optimizer state, the epoch fit starts at, the global
  // random generator and the training dataset's shuffles (data::Dataset::get_state), so shuffles and
  // dropout continue as in an uninterrupted run with a global seed: resumed at an epoch boundary, the
  // final weights are bit-identical.
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  const std::string& weights_path() const { return weights_path_; }
  const std::string& metadata_path() const { return metadata_path_; }

 private:
  void load();
  void save();

  std::string backup_dir_, weights_path_, metadata_path_;
  BackupAndRestoreOptions options_;
  int current_epoch_ = 0;
  int64_t last_batch_seen_ = 0;
  BatchSaveCounter counter_;
};

}  // namespace ember::callbacks
