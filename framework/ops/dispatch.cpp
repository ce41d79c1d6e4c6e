#include "framework/ops/dispatch.h"

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "framework/core/device_graph.h"
#include "framework/core/profiler.h"
#include "framework/core/trace_hooks.h"
#include "framework/ops/direct_kernel.h"

namespace ember {

namespace {

struct KernelEntry {
  KernelFn fn = nullptr;
  uint32_t dtype_mask = 0;  // dispatch_bit per DType
};

KernelEntry& entry(OpId op, DeviceType device) {
  static KernelEntry table[kNumOps][kNumDeviceTypes];
  return table[static_cast<int>(op)][static_cast<int>(device)];
}

uint32_t dispatch_bit(DType t) { return 1u << static_cast<int>(t); }

// Hooks sit in fixed slots read without a lock: every op checks them, few ever change them.
constexpr int kMaxHooks = 16;
std::atomic<OpHook> g_hooks[kMaxHooks];
std::atomic<int> g_hook_count{0};
std::atomic<int> g_every_op_count{0};  // hooks added with needs_every_op
bool g_needs_every_op[kMaxHooks] = {};  // per slot, under g_hooks_mu
std::mutex g_hooks_mu;

// The device an op runs on: the inputs' (they must agree, 0-d CPU scalars excepted), else `fallback`. Inputs
// must be defined, except where `optional_inputs` (see takes_undefined_inputs).
Device resolve_device(const char* op, std::span<const Tensor> inputs, Device fallback, bool optional_inputs) {
  const Tensor* anchor = nullptr;
  for (const Tensor& t : inputs) {
    if (!t.defined() && optional_inputs) continue;
    EMBER_CHECK(t.defined(), InvalidArgument) << op << ": an input tensor is undefined";
    if (t.rank() == 0 && t.device().is_cpu()) continue;
    if (!anchor) {
      anchor = &t;
    } else {
      EMBER_CHECK(t.device() == anchor->device(), InvalidArgument)
          << op << ": inputs are on different devices, " << anchor->device() << " and " << t.device()
          << " (move one with tensor.to(device))";
    }
  }
  if (anchor) return anchor->device();
  return inputs.empty() ? fallback : Device::cpu();
}

// A 0-d CPU scalar used by an op on another device, as a tensor on that device. Constants recur (x * 2.0f,
// the 1 - beta of an update), so each (device, dtype, value) is uploaded once and kept: tensors are values,
// so sharing one is safe.
Tensor device_scalar(const Tensor& t, Device device) {
  struct Key {
    Device device;
    DType dtype;
    uint64_t bits;
    bool operator<(const Key& o) const {
      if (device.type() != o.device.type()) return device.type() < o.device.type();
      if (device.index() != o.device.index()) return device.index() < o.device.index();
      if (dtype != o.dtype) return dtype < o.dtype;
      return bits < o.bits;
    }
  };
  static std::mutex mu;
  static std::map<Key, Tensor>* cache = new std::map<Key, Tensor>;  // never destroyed (device tensors)
  Key key{device, t.dtype(), 0};
  std::memcpy(&key.bits, t.raw_data(), t.nbytes());
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  if (cache->size() >= 4096) cache->clear();
  Tensor moved = t.to(device);
  cache->emplace(key, moved);
  return moved;
}

}  // namespace

void register_kernel(OpId op, DeviceType device, KernelFn fn, std::vector<DType> dtypes) {
  KernelEntry& e = entry(op, device);
  e.fn = fn;
  e.dtype_mask = 0;
  if (dtypes.empty()) e.dtype_mask = ~0u;
  for (DType t : dtypes) e.dtype_mask |= dispatch_bit(t);
}

bool supports(OpId op, DeviceType device, DType dtype) {
  const KernelEntry& e = entry(op, device);
  return e.fn && (e.dtype_mask & dispatch_bit(dtype));
}

bool has_kernel(OpId op, DeviceType device) { return entry(op, device).fn != nullptr; }

int add_op_hook(OpHook hook, bool needs_every_op) {
  std::lock_guard<std::mutex> lock(g_hooks_mu);
  for (int i = 0; i < kMaxHooks; ++i) {
    if (!g_hooks[i].load()) {
      g_needs_every_op[i] = needs_every_op;
      if (needs_every_op) g_every_op_count.fetch_add(1);
      g_hooks[i].store(hook);
      g_hook_count.fetch_add(1);
      return i;
    }
  }
  throw make_error<ResourceExhausted>("add_op_hook: all ", kMaxHooks, " hook slots are taken");
}

void remove_op_hook(int id) {
  std::lock_guard<std::mutex> lock(g_hooks_mu);
  if (id < 0 || id >= kMaxHooks || !g_hooks[id].exchange(nullptr)) return;
  g_hook_count.fetch_sub(1);
  if (g_needs_every_op[id]) g_every_op_count.fetch_sub(1);
}

namespace detail {
bool has_op_hooks() { return g_every_op_count.load(std::memory_order_acquire) != 0; }

std::recursive_mutex& device_enqueue_mutex(Device device) {
  constexpr int kLockedDevices = 16;
  static std::recursive_mutex device_mu[kNumDeviceTypes][kLockedDevices];
  return device_mu[static_cast<int>(device.type())][device.index() % kLockedDevices];
}
}  // namespace detail

namespace {
// The outputs of an op on `device`, one per spec: views of the inputs they alias, new tensors, or the buffers
// the caller placed (a replay's memory plan), checked.
void make_outputs(const char* name, std::span<const Tensor> inputs, std::span<const OutputSpec> specs,
                  std::span<Tensor> outputs, Device device) {
  for (size_t i = 0; i < specs.size(); ++i) {
    const OutputSpec& s = specs[i];
    // Only a 0-d CPU scalar can sit on another device than the op's; aliased, the kernel would write a host
    // address from the device, and writing its uploaded copy instead would lose the update (or corrupt the
    // shared constant device_scalar keeps).
    if (s.alias_input >= 0) {
      const Tensor& aliased = inputs[static_cast<size_t>(s.alias_input)];
      EMBER_CHECK(aliased.device() == device, InvalidArgument)
          << name << ": output " << i << " is written in place into input " << s.alias_input << ", a 0-d tensor on "
          << aliased.device() << ", but the op runs on " << device << " (its other inputs' device); move it there "
          << "first with tensor.to(" << device << ")";
      outputs[i] = aliased.view(s.shape);
    } else if (!outputs[i].defined()) {
      outputs[i] = Tensor::empty(s.shape, s.dtype, device);
    } else {
      EMBER_CHECK(outputs[i].shape() == s.shape && outputs[i].dtype() == s.dtype && outputs[i].device() == device,
                  Internal)
          << name << ": output " << i << " was given as " << outputs[i].dtype() << outputs[i].shape() << " on "
          << outputs[i].device() << ", but the op makes " << s.dtype << s.shape << " on " << device;
    }
  }
}

void execute(OpId op, std::span<const Tensor> inputs, std::span<const OutputSpec> specs, std::span<Tensor> outputs,
             const Attrs& attrs, Device fallback) {
  // The table's arity: a front end passing another number of tensors would hand its kernel the wrong ones.
  const int arity = op_info(op).arity;
  EMBER_CHECK(arity < 0 || static_cast<size_t>(arity) == inputs.size(), Internal)
      << op << ": called with " << inputs.size() << " tensor input(s); op_list.def gives it " << arity;
  const char* const name = op_name(op, attrs);  // a custom op's own name
  for (const Tensor& t : inputs)
    if (t.defined() && t.is_symbolic()) t.check_concrete(name);
  const bool optional_inputs = takes_undefined_inputs(op);
  Device device = resolve_device(name, inputs, fallback, optional_inputs);
  const KernelEntry& k = entry(op, device.type());
  EMBER_CHECK(k.fn, Unimplemented) << name << ": no kernel is registered for device " << device;
  // The dtype a kernel is chosen by: the first input's, or the output's for creation ops.
  DType key = inputs.empty() ? specs[0].dtype : inputs[0].dtype();
  EMBER_CHECK(k.dtype_mask & dispatch_bit(key), InvalidArgument)
      << name << ": dtype " << key << " is not supported on " << device;
  // A trace records this op whole: not the views made here for outputs aliasing an input, nor what a kernel
  // runs inside (views, other ops).
  OpTracer* const op_tracer = detail::t_op_tracer;
  // The profiler's view: this op's time, and whether it runs inside another op's kernel.
  const bool profiling = profiler::detail::recording();
  const int64_t profile_start = profiling ? profiler::detail::now_ns() : 0;
  profiler::detail::DeviceSpan device_span;  // the op's kernels' marks on an accelerator's stream
  thread_local int op_depth = 0;
  struct DepthGuard {
    int& depth;
    ~DepthGuard() { --depth; }
  } depth_guard{++op_depth};
  {
    struct Untraced {
      detail::TensorTracer* saved_tensor = std::exchange(detail::t_tensor_tracer, nullptr);
      OpTracer* saved_op = std::exchange(detail::t_op_tracer, nullptr);
      ~Untraced() {
        detail::t_tensor_tracer = saved_tensor;
        detail::t_op_tracer = saved_op;
      }
    } untraced;
    make_outputs(name, inputs, specs, outputs, device);
    // Kernels see only tensors on their device: 0-d CPU scalars mixed into a GPU op are uploaded.
    std::vector<Tensor> moved;
    std::span<const Tensor> kernel_inputs = inputs;
    if (!device.is_cpu()) {
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i].defined() || inputs[i].device() == device) continue;
        if (moved.empty()) moved.assign(inputs.begin(), inputs.end());
        moved[i] = device_scalar(inputs[i], device);
      }
      if (!moved.empty()) kernel_inputs = moved;
    }
    if (device.is_cpu()) {
      k.fn(KernelContext{op, kernel_inputs, outputs, attrs});
    } else {
      // An accelerator's ops are enqueued one at a time per device: they share the device's stream and
      // scratch workspace, which a second host thread must not reuse between an op's launches. Enqueueing is
      // quick, so the lock is held briefly; recursive for kernels that run other ops. Each device has its
      // own lock (devices 16 apart share one), so threads driving different GPUs enqueue in parallel.
      std::lock_guard<std::recursive_mutex> lock(detail::device_enqueue_mutex(device));
      // A captured graph reads the uploaded scalars at their addresses: they live as long as it does.
      if (device_graph::Capture* capture = device_graph::current())
        for (const Tensor& t : moved)
          if (t.defined()) capture->keep(t);
      // While profiling, an outermost op's kernels are timed on the device's stream (see profiler.h).
      profiler::detail::DeviceTimer* const timer =
          profiling && op_depth == 1 ? profiler::detail::device_timer() : nullptr;
      if (timer) device_span = {device.index(), timer->mark(device.index()), nullptr};
      try {
        k.fn(KernelContext{op, kernel_inputs, outputs, attrs});
        if (timer) device_span.end = timer->mark(device.index());
      } catch (...) {
        if (device_span.begin) timer->release(device.index(), device_span.begin);
        throw;
      }
    }
  }
  if (profiling) {
    int64_t bytes = 0;
    for (size_t i = 0; i < specs.size(); ++i)
      if (specs[i].alias_input < 0) bytes += static_cast<int64_t>(outputs[i].nbytes());
    profiler::detail::record_op(name, inputs, outputs, profile_start, profiler::detail::now_ns(), bytes,
                                op_depth > 1, device_span);
  }
  if (op_tracer) op_tracer->op(op, inputs, specs, outputs, attrs, device);
  if (g_hook_count.load(std::memory_order_acquire) == 0) return;
  OpRecord rec{op, inputs, outputs, attrs};
  for (auto& slot : g_hooks)
    if (OpHook fn = slot.load(std::memory_order_acquire)) fn(rec);
}
}  // namespace

std::vector<Tensor> run_op(OpId op, std::span<const Tensor> inputs, std::span<const OutputSpec> outputs, Attrs attrs,
                           Device device) {
  std::vector<Tensor> out(outputs.size());
  execute(op, inputs, outputs, out, attrs, device);
  return out;
}

Tensor run_op(OpId op, std::span<const Tensor> inputs, const OutputSpec& output, Attrs attrs, Device device) {
  Tensor out;
  execute(op, inputs, std::span<const OutputSpec>(&output, 1), std::span<Tensor>(&out, 1), attrs, device);
  return out;
}

void run_op_into(OpId op, std::span<const Tensor> inputs, std::span<const OutputSpec> specs, std::span<Tensor> outputs,
                 const Attrs& attrs, Device device) {
  execute(op, inputs, specs, outputs, attrs, device);
}

bool takes_undefined_inputs(OpId op) {
  // apply_adam_multi takes each gradient whole or as two factors, the other parts undefined.
  return op == OpId::apply_adam_multi;
}

KernelFn find_kernel(OpId op, DeviceType device, DType key) {
  const KernelEntry& k = entry(op, device);
  return k.fn && (k.dtype_mask & dispatch_bit(key)) ? k.fn : nullptr;
}

void run_kernel_into(KernelFn kernel, OpId op, std::span<const Tensor> inputs, std::span<const OutputSpec> specs,
                     std::span<Tensor> outputs, const Attrs& attrs) {
  make_outputs(op_name(op, attrs), inputs, specs, outputs, Device::cpu());
  kernel(KernelContext{op, inputs, outputs, attrs});
}

}  // namespace ember
