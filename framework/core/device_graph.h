#pragma once
// Capture of a device's queued work into a graph that one launch replays (CUDA graphs), behind an interface
// free of CUDA types: the graph executor (framework/graph) uses it, the CUDA backend implements it and sets
// itself as the implementation when the library loads. See docs/gpu.md ("CUDA graphs").
#include <memory>
#include <string>
#include <vector>

#include "framework/core/device.h"
#include "framework/core/tensor.h"

namespace ember::device_graph {

// An instantiated graph: launch() enqueues the captured work on the device's stream again, with the same
// buffers. Destroying it gives its memory pool back to the device's allocator.
class Graph {
 public:
  virtual ~Graph() = default;
  virtual void launch() = 0;
};

// A capture in progress on the calling thread. Until finish(), the device's ops enqueued by this thread are
// recorded rather than run; their allocations come from a pool private to the graph (kept while the graph
// lives, never handed to other tensors); host reads and uploads, which a replay could not repeat, throw; and
// other threads' ops for the device wait. Destroying an unfinished capture discards it.
class Capture {
 public:
  virtual ~Capture() = default;
  // Ends the capture: the graph, or nullptr with `why` saying what stopped it.
  virtual std::unique_ptr<Graph> finish(std::string& why) = 0;
  // Keeps `t` alive as long as the graph (a device copy of a host scalar the captured kernels read).
  virtual void keep(const Tensor& t) = 0;
};

// Starts capturing `device`'s work on this thread, or returns nullptr with `why` (a CPU device, a build
// without CUDA, a capture already running on the device).
std::unique_ptr<Capture> begin(Device device, std::string& why);

// The capture running on this thread, or nullptr.
Capture* current();

namespace detail {
using BeginFn = std::unique_ptr<Capture> (*)(int index, std::string& why);
// Set by a backend when the library loads.
void set_backend(DeviceType type, BeginFn begin);
// Set by a backend's Capture on the thread that captures (nullptr when it ends).
void set_current(Capture* capture);
}  // namespace detail

}  // namespace ember::device_graph
