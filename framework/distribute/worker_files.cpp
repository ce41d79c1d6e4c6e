#include "framework/distribute/worker_files.h"

#include <unistd.h>

#include <filesystem>

#include "framework/distribute/communicator.h"

namespace ember::distribute {

namespace fs = std::filesystem;

namespace {
// Outside the chief's directory: the chief may remove that (BackupAndRestore at the end of training) while this
// worker still writes.
fs::path temp_dir(const std::string& path) {
  const auto* world = detail::Communicator::existing();
  return fs::temp_directory_path() / ("ember_workertemp_" + std::to_string(world ? world->rank() : 0) + "_" +
                                      std::to_string(::getpid()));
}
}  // namespace

bool is_chief_worker() {
  const auto* world = detail::Communicator::existing();
  return !world || world->rank() == 0;
}

std::string write_filepath(const std::string& path) {
  if (is_chief_worker()) return path;
  fs::create_directories(temp_dir(path));
  return (temp_dir(path) / fs::path(path).filename()).string();
}

void remove_temp_filepath(const std::string& path) {
  if (is_chief_worker()) return;
  std::error_code ignored;
  fs::remove_all(temp_dir(path), ignored);
}

}  // namespace ember::distribute
