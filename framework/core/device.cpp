#include "framework/core/device.h"

#include <ostream>

#include "framework/core/allocator.h"
#include "framework/core/error.h"

namespace ember {

namespace {
// The innermost DeviceScope's device on this thread, if any.
thread_local const Device* t_scoped = nullptr;
thread_local Device t_scoped_value;
}

std::string Device::to_string() const {
  return std::string(is_cpu() ? "cpu:" : "cuda:") + std::to_string(index_);
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.to_string(); }

Device default_device() {
  if (t_scoped) return *t_scoped;
  // As TF: ops go to the first GPU when there is one.
  static const Device automatic = device_count(DeviceType::CUDA) > 0 ? Device::cuda(0) : Device::cpu();
  return automatic;
}

DeviceScope::DeviceScope(Device device) : previous_(default_device()), had_scope_(t_scoped != nullptr) {
  // Validates the device exists (an allocator is registered for it) before anything is placed there.
  allocator_for(device);
  t_scoped_value = device;
  t_scoped = &t_scoped_value;
}

DeviceScope::~DeviceScope() {
  t_scoped_value = previous_;
  if (!had_scope_) t_scoped = nullptr;
}

}  // namespace ember
