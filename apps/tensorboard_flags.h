#pragma once
// The training apps' --logdir and --profile: TensorBoard event files, and a profile of chosen training batches
// (a Chrome trace under <logdir>/train/plugins/profile/, and the table of the ops that took the time).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "framework/ember.h"

namespace ember::apps {

struct TensorBoardFlags {
  std::string logdir;
  std::vector<int64_t> profile;  // training batches to profile: N or START,STOP
};

inline void add_tensorboard_flags(CLI::App& app, TensorBoardFlags& f) {
  CLI::Option* logdir = app.add_option("--logdir", f.logdir, "Write TensorBoard event files here");
  app.add_option("--profile", f.profile,
                 "Profile training batch N (from 1), or batches START,STOP, into --logdir's train/plugins/profile/ "
                 "(a Chrome trace; prints the ops that took the time)")
      ->delimiter(',')
      ->expected(1, 2)
      ->check(CLI::PositiveNumber)
      ->needs(logdir);
}

// Adds the TensorBoard callback the flags ask for (none without --logdir) to `callbacks`.
inline void add_tensorboard_callback(const TensorBoardFlags& f, std::vector<callbacks::CallbackArg>& callbacks) {
  if (f.logdir.empty()) return;
  callbacks::ProfileBatch profile;
  if (f.profile.size() == 1) profile = {f.profile[0]};
  if (f.profile.size() == 2) profile = {f.profile[0], f.profile[1]};
  callbacks.push_back(callbacks::TensorBoard(f.logdir, {.profile_batch = profile}));
}

}  // namespace ember::apps
