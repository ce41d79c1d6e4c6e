#pragma once
// The one dispatch point every op passes through: (op, device) -> kernel, plus hooks that observe
// each executed op (the tape, check_numerics, a profiler).
#include <mutex>
#include <span>
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/attrs.h"
#include "framework/ops/op.h"

namespace ember {

// What a kernel sees: inputs, outputs already allocated on the device, and the op's attributes.
struct KernelContext {
  OpId op;
  std::span<const Tensor> inputs;
  std::span<Tensor> outputs;
  const Attrs& attrs;
};
using KernelFn = void (*)(const KernelContext&);

// Description of one output the front end computed (shape inference and validation live in the front end).
struct OutputSpec {
  Shape shape;
  DType dtype;
  // >= 0: the output views this input's storage: a reshape (the kernel writes nothing) or an update in
  // place (the kernel writes through it).
  int alias_input = -1;
};

// Registers the kernel of `op` on a device type for the dtypes in `dtypes` (empty = all).
void register_kernel(OpId op, DeviceType device, KernelFn fn, std::vector<DType> dtypes = {});
// Whether a kernel exists for (op, device type) and accepts dtype.
bool supports(OpId op, DeviceType device, DType dtype);
bool has_kernel(OpId op, DeviceType device);

// Registers a kernel from a .cpp file at static-initialisation time:
//   EMBER_REGISTER_KERNEL(add, CPU, add_cpu);
#define EMBER_REGISTER_KERNEL(op, device, fn, ...)                                                     \
  static const bool ember_registered_##op##_##device = [] {                                          \
    ::ember::register_kernel(::ember::OpId::op, ::ember::DeviceType::device, fn, {__VA_ARGS__}); \
    return true;                                                                                     \
  }()

// Everything a hook learns about one executed op.
struct OpRecord {
  OpId op;
  std::span<const Tensor> inputs;
  std::span<const Tensor> outputs;
  const Attrs& attrs;
};
using OpHook = void (*)(const OpRecord&);
// Adds a hook called after every op; returns an id for remove_op_hook. A hook that needs every op passing
// through here (the default) turns CUDA graph replay off while it is installed, since a launched graph's ops do
// not; `needs_every_op = false` is for a hook that acts only while some state it owns is on, which the replay
// checks itself (the gradient tape's, installed for good by the first tape: a recording tape stops the replay).
int add_op_hook(OpHook hook, bool needs_every_op = true);
void remove_op_hook(int id);

// What a graph trace (framework/graph) learns from the dispatch point: every op run while it is installed
// on the thread, with the device it ran on.
class OpTracer {
 public:
  virtual ~OpTracer() = default;
  virtual void op(OpId op, std::span<const Tensor> inputs, std::span<const OutputSpec> specs,
                  std::span<const Tensor> outputs, const Attrs& attrs, Device device) = 0;
};
namespace detail {
// The tracer of this thread, or nullptr.
inline thread_local OpTracer* t_op_tracer = nullptr;
// Whether hooks that need every op are installed (see add_op_hook: no captured replay then).
bool has_op_hooks();
// The lock under which an accelerator's ops are enqueued (recursive): a CUDA graph capture holds it, so that
// no other thread's op joins the captured stream.
std::recursive_mutex& device_enqueue_mutex(Device device);
}  // namespace detail

// Runs `op`: resolves the device (inputs must share one, 0-d CPU scalars excepted; ops without
// inputs use `device`), allocates the outputs, runs the kernel and calls the hooks.
std::vector<Tensor> run_op(OpId op, std::span<const Tensor> inputs, std::span<const OutputSpec> outputs,
                           Attrs attrs = {}, Device device = default_device());
// The single-output form.
Tensor run_op(OpId op, std::span<const Tensor> inputs, const OutputSpec& output, Attrs attrs = {},
              Device device = default_device());

// run_op writing into `outputs` (one per spec; one given defined is written as is), attrs read in place: for replays.
void run_op_into(OpId op, std::span<const Tensor> inputs, std::span<const OutputSpec> specs, std::span<Tensor> outputs,
                 const Attrs& attrs, Device device);

}  // namespace ember
