#pragma once
// Allocator interface with statistics, the 64-byte aligned CPU allocator, and ref-counted Storage.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "framework/core/device.h"

namespace ember {

// Byte counts an allocator has handed out (TF: tf.config.experimental.get_memory_info).
struct MemoryInfo {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes = 0;
  int64_t allocation_count = 0;  // allocations made so far
  int64_t bytes_reserved = 0;    // held from the system (equals bytes_in_use for the CPU allocator)
  // Requests to the system (a GPU: cudaMalloc segments and pinned staging buffers), not served from the
  // cache; 0 for the CPU allocator, which counts none.
  int64_t system_allocations = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns at least `bytes` bytes aligned to 64; throws ResourceExhausted on failure.
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr, size_t bytes) = 0;
  virtual MemoryInfo memory_info() const = 0;
  virtual void reset_peak() = 0;
  virtual Device device() const = 0;
  // Copies between memory of this device and the host; synchronises (the CPU allocator uses memcpy).
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) const;
  virtual void copy_from_host(void* dst, const void* host_src, size_t bytes) const;
  // Copies within this device's memory (enqueued on the device's stream for a GPU).
  virtual void copy_on_device(void* dst, const void* src, size_t bytes) const;
  // Waits until the device has finished every op enqueued so far (a no-op on the CPU).
  virtual void synchronize() const {}
  // How often the host has waited for this device so far (stream drains, blocking reads, copies that had
  // to wait); for tests that a training step queues ahead without waiting. 0 on the CPU.
  virtual int64_t host_synchronizations() const { return 0; }
  // GPU memory options (config::set_memory_growth / set_memory_limit); the CPU allocator refuses them.
  virtual void set_memory_growth(bool enable);
  virtual bool memory_growth() const { return true; }
  virtual void set_memory_limit(int64_t bytes);
};

// The allocator of a device; throws InvalidArgument for a device that does not exist.
Allocator& allocator_for(Device device);
// Registers the allocator of a backend (the CUDA backend registers its own).
void register_allocator(DeviceType type, Allocator* (*factory)(int index), int (*device_count)());
// Number of devices of a type that are usable (CPU: 1).
int device_count(DeviceType type);

// A block of device memory shared by every tensor that views it; freed when the last one goes.
class Storage {
 public:
  Storage(size_t bytes, Device device);
  // A host block holding `count` std::string objects (string tensors), constructed empty here and destroyed
  // with the block.
  static std::shared_ptr<Storage> strings(size_t count);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return allocator_->device(); }

 private:
  Allocator* allocator_;
  void* data_;
  size_t bytes_;
  size_t strings_ = 0;  // std::string objects living in the block
};

}  // namespace ember
