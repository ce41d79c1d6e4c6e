#pragma once
// What a graph trace (framework/graph) learns from core: tensors made from another tensor outside any
// op (views, row slices, copies, moves between devices) and host reads of a tensor's values. The trace
// installs itself on its thread while it runs; with none installed these cost one thread-local load.
#include <functional>

namespace ember {

class Tensor;

namespace detail {

class TensorTracer {
 public:
  virtual ~TensorTracer() = default;
  // `result` was made from `source` without an op (`what`: "view", "clone", ...); replaying the trace remakes
  // it with `remake`.
  virtual void derived(const char* what, const Tensor& source, const Tensor& result,
                       std::function<Tensor(const Tensor&)> remake) = 0;
  // A host read of t's values (item, to_vector): throws InvalidArgument when t is a traced value.
  virtual void host_read(const Tensor& t, const char* what) = 0;
  // A tensor `make` computes on the host from host state that changes from call to call (an unseeded
  // permutation's draws): runs it now, and a replay runs it again (a host call node named `what`).
  virtual Tensor host_value(const char* what, std::function<Tensor()> make) = 0;
};

// The tracer of this thread, or nullptr.
inline thread_local TensorTracer* t_tensor_tracer = nullptr;

}  // namespace detail
}  // namespace ember
