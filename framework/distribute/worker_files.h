#pragma once
// Where a worker of a multi-worker job writes a checkpoint (TF: distribute/distributed_file_utils.py): the chief
// writes to the path given; every other worker writes to a temporary directory of its own, which it removes
// afterwards, so that only the chief's file exists and the workers still run the same code.
#include <string>

namespace ember::distribute {

// `path` for the chief (and for a process that is no multi-worker job's worker), else
// "<system temp dir>/ember_workertemp_<task id>_<pid>/<path's file name>" (TF writes beside the chief's file, in
// "workertemp_<task id>"; apart, the chief may remove its directory while the others still write).
std::string write_filepath(const std::string& path);
// Removes the temporary directory of write_filepath(path) (nothing on the chief).
void remove_temp_filepath(const std::string& path);
// Whether this process is the chief of its job (true outside a multi-worker job).
bool is_chief_worker();

}  // namespace ember::distribute
