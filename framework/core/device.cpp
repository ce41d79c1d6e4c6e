#include "framework/core/device.h"

#include <ostream>

#include "framework/core/allocator.h"
#include "framework/core/error.h"

namespace ember {

namespace {
thread_local Device t_current_device = Device::cpu();
}

std::string Device::to_string() const {
  return std::string(is_cpu() ? "cpu:" : "cuda:") + std::to_string(index_);
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.to_string(); }

Device default_device() { return t_current_device; }

DeviceScope::DeviceScope(Device device) : previous_(t_current_device) {
  // Validates the device exists (an allocator is registered for it) before anything is placed there.
  allocator_for(device);
  t_current_device = device;
}

DeviceScope::~DeviceScope() { t_current_device = previous_; }

}  // namespace ember
