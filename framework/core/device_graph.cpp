#include "framework/core/device_graph.h"

#include <array>
#include <atomic>
#include <exception>

namespace ember::device_graph {

namespace {
std::array<std::atomic<detail::BeginFn>, kNumDeviceTypes> g_backends{};
thread_local Capture* t_current = nullptr;
}  // namespace

std::unique_ptr<Capture> begin(Device device, std::string& why) {
  const detail::BeginFn fn = g_backends[static_cast<size_t>(device.type())].load(std::memory_order_acquire);
  if (!fn) {
    why = "no device graphs for " + device.to_string();
    return nullptr;
  }
  try {
    return fn(device.index(), why);
  } catch (const std::exception& e) {  // the device cannot be selected, its stream not made, ...
    why = e.what();
    return nullptr;
  }
}

Capture* current() { return t_current; }

namespace detail {
void set_backend(DeviceType type, BeginFn begin) {
  g_backends[static_cast<size_t>(type)].store(begin, std::memory_order_release);
}
void set_current(Capture* capture) { t_current = capture; }
}  // namespace detail

}  // namespace ember::device_graph
