#pragma once
// ember::config: threads, devices, memory statistics and determinism (TF: tf.config).
#include <string>
#include <vector>

#include "framework/core/allocator.h"
#include "framework/core/device.h"

namespace ember::config {

// Sizes the one shared intra-op thread pool (OpenMP, also used by oneDNN and Eigen); 0 = hardware threads.
void set_intra_op_parallelism_threads(int n);
// Threads of the intra-op pool.
int get_intra_op_parallelism_threads();

// Bytes in use, peak and allocation count of a device's allocator.
MemoryInfo memory_info(Device device);
// Restarts the peak-bytes statistic from what is in use now.
void reset_memory_stats(Device device);

// One device visible to Ember, named as TF names it ("/physical_device:GPU:0").
struct PhysicalDevice {
  std::string name;
  std::string device_type;  // "CPU" or "GPU"
};
// Visible devices of a type ("CPU", "GPU", or "" for all); empty, never an error, when there is none.
std::vector<PhysicalDevice> list_physical_devices(const std::string& device_type = "");

// From now on ops pick deterministic algorithms (TF: tf.config.experimental.enable_op_determinism).
void enable_op_determinism();
bool is_op_determinism_enabled();

}  // namespace ember::config
