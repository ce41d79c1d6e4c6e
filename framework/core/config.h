#pragma once
// ember::config: threads, devices, memory statistics and determinism (TF: tf.config).
#include <string>
#include <vector>

#include "framework/core/allocator.h"
#include "framework/core/device.h"

namespace ember::config {

// Sizes the shared intra-op pool (OpenMP, oneDNN, Eigen); 0 = EMBER_NUM_THREADS, else OMP_NUM_THREADS, else all cores.
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

// Whether this build of Ember has the CUDA backend (TF: tf.test.is_built_with_cuda); a CUDA build still
// runs CPU-only where there is no GPU or driver.
bool is_built_with_cuda();

// GPU memory: with growth on, the device's allocator takes memory from the driver as needed; off (the
// default, as TF), it reserves most of the device's free memory at its first allocation and serves from
// that. Must be called before the device's first allocation (TF's rule); a CPU device is an error.
void set_memory_growth(Device device, bool enable);
bool get_memory_growth(Device device);
// Caps what the device's allocator may hold (TF: a logical device's memory_limit); allocating past it
// is a ResourceExhausted error. Must be called before the device's first allocation.
void set_memory_limit(Device device, int64_t bytes);

// TF32 tensor-core math for float32 matmul and convolutions on GPUs (TF's default: enabled).
void enable_tensor_float_32_execution(bool enabled);
bool tensor_float_32_execution_enabled();

// From now on ops pick deterministic algorithms (TF: tf.config.experimental.enable_op_determinism).
void enable_op_determinism();
bool is_op_determinism_enabled();

}  // namespace ember::config
