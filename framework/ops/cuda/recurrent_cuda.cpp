// CUDA whole-sequence LSTM and GRU (framework/ops/recurrent.h) through cuDNN's RNN API (cudnnRNNForward,
// cudnnRNNBackwardData_v8, cudnnRNNBackwardWeights_v8), batch-major unpacked, one layer, one direction.
// - Weights: cuDNN keeps one (units, inputs) row-major matrix and two biases per gate in its weight space; Keras's
//   kernel (inputs, gates * units) transposed is those matrices stacked. RnnCudaWeights packs the Keras weights
//   into a weight space and unpacks a weight-space gradient into Keras's shapes: the one place that knows the
//   layout. cuDNN's GRU orders its gates r, z, h where Keras orders them z, r, h; the LSTM's i, f, c, o agree.
//   The LSTM's single Keras bias is cuDNN's input bias, its recurrent bias held at zero.
// - The forward runs in training mode and returns cuDNN's reserve space as the op's saved state; the backward copies
//   it (cuDNN's backward writes to it, and the op's inputs stay unchanged) before the data and weight gradients.
// - Sequence lengths: the data descriptors carry them (padded I/O, which the unpacked layouts need in any case); the
//   outputs past a sequence's end are filled with zeros, and the backward's dx is zeroed first so those steps' input
//   gradients are zeros too. Without lengths every sequence has all the steps.
// - GRU without reset_after is not cuDNN's GRU: the layers never send it here, and the kernel says so.
#include <array>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "framework/core/config.h"
#include "framework/core/error.h"
#include "framework/ops/cuda/conv_launch.h"
#include "framework/ops/cuda/kernel_util.h"
#include "framework/ops/cuda/library_handles.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/recurrent.h"

namespace ember {

namespace {

struct RnnCudaShape {
  bool lstm;
  int64_t batch, steps, features, units;
  int gates() const { return lstm ? 4 : 3; }
};

// The cuDNN descriptors of one call, destroyed with it.
struct RnnCudaDescs {
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnRNNDataDescriptor_t x = nullptr, y = nullptr;
  cudnnTensorDescriptor_t h = nullptr, matrix = nullptr, bias = nullptr;
  cudnnDropoutDescriptor_t dropout = nullptr;
  RnnCudaDescs() = default;
  RnnCudaDescs(const RnnCudaDescs&) = delete;
  RnnCudaDescs& operator=(const RnnCudaDescs&) = delete;
  ~RnnCudaDescs() {
    if (dropout) cudnnDestroyDropoutDescriptor(dropout);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (matrix) cudnnDestroyTensorDescriptor(matrix);
    if (h) cudnnDestroyTensorDescriptor(h);
    if (y) cudnnDestroyRNNDataDescriptor(y);
    if (x) cudnnDestroyRNNDataDescriptor(x);
    if (rnn) cudnnDestroyRNNDescriptor(rnn);
  }
};

// One call: the handle (held for the call), the descriptors, the sizes cuDNN asks for and its device buffers.
class RnnCudaCall {
 public:
  // lengths: each sequence's steps (empty: all of them).
  RnnCudaCall(const char* op, int device, DType dtype, const RnnCudaShape& shape, std::vector<int32_t> lengths = {})
      : op_(op), dev_(device), dt_(dtype), s_(shape), lease_(cuda::cudnn_handle(dev_)) {
    cuda::activate(dev_);
    EMBER_CHECK(s_.batch <= INT32_MAX && s_.steps <= INT32_MAX && s_.features <= INT32_MAX && s_.units <= INT32_MAX,
                InvalidArgument)
        << op_ << ": " << describe() << " exceeds cuDNN's 32-bit sizes";
    const cudnnDataType_t type = dt_ == DType::Float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    const cudnnMathType_t math =
        dt_ == DType::Float64 || cuda::tf32_enabled() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    check(cudnnCreateDropoutDescriptor(&d_.dropout), "cudnnCreateDropoutDescriptor");
    check(cudnnSetDropoutDescriptor(d_.dropout, handle(), 0.0f, nullptr, 0, 0), "cudnnSetDropoutDescriptor");
    check(cudnnCreateRNNDescriptor(&d_.rnn), "cudnnCreateRNNDescriptor");
    check(cudnnSetRNNDescriptor_v8(d_.rnn, CUDNN_RNN_ALGO_STANDARD, s_.lstm ? CUDNN_LSTM : CUDNN_GRU, CUDNN_RNN_DOUBLE_BIAS,
                                   CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, type, type, math, i32(s_.features),
                                   i32(s_.units), i32(s_.units), 1, d_.dropout, CUDNN_RNN_PADDED_IO_ENABLED),
          "cudnnSetRNNDescriptor_v8");
    if (lengths.empty()) lengths.assign(static_cast<size_t>(s_.batch), i32(s_.steps));
    check(cudnnCreateRNNDataDescriptor(&d_.x), "cudnnCreateRNNDataDescriptor");
    check(cudnnSetRNNDataDescriptor(d_.x, type, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, i32(s_.steps),
                                    i32(s_.batch), i32(s_.features), lengths.data(), nullptr),
          "cudnnSetRNNDataDescriptor");
    check(cudnnCreateRNNDataDescriptor(&d_.y), "cudnnCreateRNNDataDescriptor");
    check(cudnnSetRNNDataDescriptor(d_.y, type, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, i32(s_.steps),
                                    i32(s_.batch), i32(s_.units), lengths.data(),
                                    dt_ == DType::Float64 ? static_cast<void*>(&zero_f64_) : &zero_f32_),
          "cudnnSetRNNDataDescriptor");
    const int dims[3] = {1, i32(s_.batch), i32(s_.units)}, strides[3] = {i32(s_.batch * s_.units), i32(s_.units), 1};
    check(cudnnCreateTensorDescriptor(&d_.h), "cudnnCreateTensorDescriptor");
    check(cudnnSetTensorNdDescriptor(d_.h, type, 3, dims, strides), "cudnnSetTensorNdDescriptor");
    check(cudnnCreateTensorDescriptor(&d_.matrix), "cudnnCreateTensorDescriptor");
    check(cudnnCreateTensorDescriptor(&d_.bias), "cudnnCreateTensorDescriptor");
    check(cudnnGetRNNWeightSpaceSize(handle(), d_.rnn, &weight_bytes_), "cudnnGetRNNWeightSpaceSize");
    seq_lengths_ = Tensor::from_vector<int32_t>(lengths, Device::cuda(dev_));
  }

  cudnnHandle_t handle() const { return lease_.handle; }
  const RnnCudaDescs& descs() const { return d_; }
  const RnnCudaShape& shape() const { return s_; }
  int device() const { return dev_; }
  DType dtype() const { return dt_; }
  const char* op() const { return op_; }
  size_t weight_bytes() const { return weight_bytes_; }
  const int32_t* seq_lengths() const { return seq_lengths_.data<int32_t>(); }
  int64_t elem_bytes() const { return dt_ == DType::Float64 ? 8 : 4; }

  void check(cudnnStatus_t st, const char* call) const {
    cuda::check_cudnn(st, op_, call, [&] { return describe(); });
  }
  void check_cuda(cudaError_t err) const { EMBER_CUDA_CHECK(err, op_); }

  // A device buffer of `bytes` for the call (the stream-ordered allocator keeps it valid for the enqueued work).
  Tensor buffer(size_t bytes) const {
    const int64_t n = static_cast<int64_t>((bytes + elem_bytes() - 1) / elem_bytes());
    return Tensor::empty({n}, dt_, Device::cuda(dev_));
  }
  // The workspace and reserve space sizes for this sequence (training mode).
  std::array<size_t, 2> temp_sizes() const {
    std::array<size_t, 2> sizes{0, 0};
    check(cudnnGetRNNTempSpaceSizes(handle(), d_.rnn, CUDNN_FWD_MODE_TRAINING, d_.x, &sizes[0], &sizes[1]),
          "cudnnGetRNNTempSpaceSizes");
    return sizes;
  }

  // The pointers of cuDNN's gate `id` (0 .. gates - 1: input matrix, gates .. 2 gates - 1: recurrent) in a weight space.
  std::array<void*, 2> weight_params(const void* space, int id) const {
    void *m = nullptr, *b = nullptr;
    check(cudnnGetRNNWeightParams(handle(), d_.rnn, 0, weight_bytes_, space, id, d_.matrix, &m, d_.bias, &b),
          "cudnnGetRNNWeightParams");
    return {m, b};
  }

  std::string describe() const {
    std::ostringstream os;
    os << (s_.lstm ? "LSTM" : "GRU") << " batch " << s_.batch << ", steps " << s_.steps << ", features " << s_.features
       << ", units " << s_.units << ", " << dtype_name(dt_) << " on cuda:" << dev_;
    return os.str();
  }

 private:
  static int i32(int64_t v) { return static_cast<int>(v); }

  const char* op_;
  int dev_;
  DType dt_;
  RnnCudaShape s_;
  cuda::CudnnLease lease_;
  RnnCudaDescs d_;
  size_t weight_bytes_ = 0;
  Tensor seq_lengths_;
  float zero_f32_ = 0;  // the outputs' padding fill
  double zero_f64_ = 0;
};

// Keras's gate g's position in cuDNN's order: the GRU's z, r, h are cuDNN's 1, 0, 2.
int rnn_cudnn_gate(const RnnCudaShape& s, int g) { return s.lstm || g == 2 ? g : 1 - g; }

// Packs and unpacks between Keras's kernel (features, gates * units), recurrent_kernel (units, gates * units), bias
// ((gates * units), or (2, gates * units) for the GRU) and cuDNN's weight space.
class RnnCudaWeights {
 public:
  explicit RnnCudaWeights(const RnnCudaCall& call) : c_(call) {}

  // A weight space holding the Keras weights.
  Tensor pack(const Tensor& kernel, const Tensor& recurrent, const Tensor& bias) const {
    Tensor space = c_.buffer(c_.weight_bytes());
    c_.check_cuda(cudaMemsetAsync(space.raw_data(), 0, c_.weight_bytes(), stream()));
    for (int part = 0; part < 2; ++part) {
      const Tensor& w = part == 0 ? kernel : recurrent;
      const int64_t rows = w.shape()[0], cols = w.shape()[1], block = rows * unit_bytes();
      Tensor t = c_.buffer(static_cast<size_t>(rows * cols * c_.elem_bytes()));
      cuda::launch_conv_transpose2d(w.raw_data(), t.raw_data(), rows, cols, eb(), c_.device(), c_.op());
      for (int g = 0; g < c_.shape().gates(); ++g) {
        const auto p = c_.weight_params(space.raw_data(), part * c_.shape().gates() + rnn_cudnn_gate(c_.shape(), g));
        copy(p[0], static_cast<const char*>(t.raw_data()) + g * block, block);
        // Keras's LSTM bias is the input bias; the GRU's rows are the input and the recurrent biases.
        if (!c_.shape().lstm || part == 0)
          copy(p[1], static_cast<const char*>(bias.raw_data()) + (part * c_.shape().gates() + g) * unit_bytes(),
               unit_bytes());
      }
    }
    return space;
  }

  // Writes a weight-space gradient into Keras's kernel, recurrent_kernel and bias gradients.
  void unpack(const Tensor& space, Tensor& dkernel, Tensor& drecurrent, Tensor& dbias) const {
    for (int part = 0; part < 2; ++part) {
      Tensor& w = part == 0 ? dkernel : drecurrent;
      const int64_t rows = w.shape()[0], cols = w.shape()[1], block = rows * unit_bytes();
      Tensor t = c_.buffer(static_cast<size_t>(rows * cols * c_.elem_bytes()));
      for (int g = 0; g < c_.shape().gates(); ++g) {
        const auto p = c_.weight_params(space.raw_data(), part * c_.shape().gates() + rnn_cudnn_gate(c_.shape(), g));
        copy(static_cast<char*>(t.raw_data()) + g * block, p[0], block);
        if (!c_.shape().lstm || part == 0)
          copy(static_cast<char*>(dbias.raw_data()) + (part * c_.shape().gates() + g) * unit_bytes(), p[1],
               unit_bytes());
      }
      cuda::launch_conv_transpose2d(t.raw_data(), w.raw_data(), cols, rows, eb(), c_.device(), c_.op());
    }
  }

 private:
  cudaStream_t stream() const { return cuda::stream(c_.device()); }
  int eb() const { return static_cast<int>(c_.elem_bytes()); }
  int64_t unit_bytes() const { return c_.shape().units * c_.elem_bytes(); }
  void copy(void* dst, const void* src, int64_t bytes) const {
    c_.check_cuda(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream()));
  }

  const RnnCudaCall& c_;
};

void rnn_check_reset_after(const KernelContext& ctx) {
  EMBER_CHECK(std::get<RnnSequenceAttrs>(ctx.attrs).reset_after, Unimplemented)
      << op_name(ctx.op) << ": cuDNN's GRU applies the reset gate after the recurrent product; reset_after=False runs "
      << "on the CPU only (the GRU layer takes its per-step path on a GPU)";
}

// lengths_at: where the op's optional sequence_lengths input would be.
RnnCudaCall rnn_cuda_call(const KernelContext& ctx, bool lstm, size_t lengths_at) {
  const Shape &x = ctx.inputs[0].shape(), &h0 = ctx.inputs[1].shape();
  std::vector<int32_t> lengths;
  if (ctx.inputs.size() > lengths_at)
    lengths = ops::detail::rnn_sequence_lengths(op_name(ctx.op), ctx.inputs[lengths_at], x[1]);
  return RnnCudaCall(op_name(ctx.op), cuda::device_of(ctx), ctx.inputs[0].dtype(),
                     RnnCudaShape{lstm, x[0], x[1], x[2], h0[1]}, std::move(lengths));
}

// The saved state: cuDNN's reserve space, in elements of the op's dtype.
int64_t rnn_saved_elements_cuda(const ops::detail::RnnSavedQuery& q) {
  const RnnCudaCall call(q.lstm ? "lstm_sequence" : "gru_sequence", q.device.index(), q.dtype,
                         RnnCudaShape{q.lstm, q.batch, q.steps, q.features, q.units});
  const int64_t bytes = static_cast<int64_t>(call.temp_sizes()[1]);
  return (bytes + call.elem_bytes() - 1) / call.elem_bytes();
}

// Inputs: x, h0, [c0,] kernel, recurrent, bias. Outputs: y, h, [c,] saved (the reserve space).
void rnn_sequence_cuda(const KernelContext& ctx, bool lstm) {
  const auto& in = ctx.inputs;
  const auto& out = ctx.outputs;
  const int w = lstm ? 3 : 2;  // where the weights start
  RnnCudaCall call = rnn_cuda_call(ctx, lstm, w + 3);
  const auto& d = call.descs();
  const Tensor space = RnnCudaWeights(call).pack(in[w], in[w + 1], in[w + 2]);
  const auto [work, reserve_bytes] = call.temp_sizes();
  Tensor& reserve = out[lstm ? 3 : 2];
  EMBER_CHECK(static_cast<size_t>(reserve.nbytes()) >= reserve_bytes, Internal)
      << call.op() << ": the saved state has " << reserve.nbytes() << " bytes, cuDNN asks for " << reserve_bytes;
  void* workspace = cuda::workspace(call.device(), work);
  call.check(cudnnRNNForward(call.handle(), d.rnn, CUDNN_FWD_MODE_TRAINING, call.seq_lengths(), d.x, in[0].raw_data(),
                             d.y, out[0].raw_data(), d.h, in[1].raw_data(), out[1].raw_data(), lstm ? d.h : nullptr,
                             lstm ? in[2].raw_data() : nullptr, lstm ? out[2].raw_data() : nullptr, call.weight_bytes(),
                             space.raw_data(), work, workspace, reserve_bytes, reserve.raw_data()),
             "cudnnRNNForward");
  cuda::after_launch(call.op(), call.device());
}

// Inputs: x, h0, [c0,] kernel, recurrent, bias, y, saved, dy, dh, [dc]. Outputs: dx, dh0, [dc0,] dkernel, drecurrent,
// dbias.
void rnn_sequence_grad_cuda(const KernelContext& ctx, bool lstm) {
  const auto& in = ctx.inputs;
  const auto& out = ctx.outputs;
  const int w = lstm ? 3 : 2;
  const size_t lengths_at = lstm ? 11 : 9;
  RnnCudaCall call = rnn_cuda_call(ctx, lstm, lengths_at);
  const auto& d = call.descs();
  const RnnCudaWeights weights(call);
  const Tensor space = weights.pack(in[w], in[w + 1], in[w + 2]);
  const auto [work, reserve_bytes] = call.temp_sizes();
  void* workspace = cuda::workspace(call.device(), work);
  const Tensor &y = in[w + 3], &saved = in[w + 4], &dy = in[w + 5], &dh = in[w + 6];
  EMBER_CHECK(static_cast<size_t>(saved.nbytes()) >= reserve_bytes, InvalidArgument)
      << call.op() << ": the saved state has " << saved.nbytes() << " bytes, cuDNN asks for " << reserve_bytes
      << " (pass the forward op's last output)";
  Tensor reserve = call.buffer(reserve_bytes);
  call.check_cuda(cudaMemcpyAsync(reserve.raw_data(), saved.raw_data(), reserve_bytes, cudaMemcpyDeviceToDevice,
                                  cuda::stream(call.device())));
  if (in.size() > lengths_at)  // cuDNN writes each sequence's own steps; those past its end keep these zeros
    call.check_cuda(cudaMemsetAsync(out[0].raw_data(), 0, static_cast<size_t>(out[0].nbytes()),
                                    cuda::stream(call.device())));
  const void* c0 = lstm ? in[2].raw_data() : nullptr;
  cudnnTensorDescriptor_t c_desc = lstm ? d.h : nullptr;
  call.check(cudnnRNNBackwardData_v8(call.handle(), d.rnn, call.seq_lengths(), d.y, y.raw_data(), dy.raw_data(), d.x,
                                     out[0].raw_data(), d.h, in[1].raw_data(), dh.raw_data(), out[1].raw_data(), c_desc,
                                     c0, lstm ? in[w + 7].raw_data() : nullptr, lstm ? out[2].raw_data() : nullptr,
                                     call.weight_bytes(), space.raw_data(), work, workspace, reserve_bytes,
                                     reserve.raw_data()),
             "cudnnRNNBackwardData_v8");
  Tensor dspace = call.buffer(call.weight_bytes());
  call.check_cuda(cudaMemsetAsync(dspace.raw_data(), 0, call.weight_bytes(), cuda::stream(call.device())));
  call.check(cudnnRNNBackwardWeights_v8(call.handle(), d.rnn, CUDNN_WGRAD_MODE_ADD, call.seq_lengths(), d.x,
                                        in[0].raw_data(), d.h, in[1].raw_data(), d.y, y.raw_data(), call.weight_bytes(),
                                        dspace.raw_data(), work, workspace, reserve_bytes, reserve.raw_data()),
             "cudnnRNNBackwardWeights_v8");
  weights.unpack(dspace, out[w], out[w + 1], out[w + 2]);
  cuda::after_launch(call.op(), call.device());
}

void lstm_sequence_cuda(const KernelContext& ctx) { rnn_sequence_cuda(ctx, true); }
void lstm_sequence_grad_cuda(const KernelContext& ctx) { rnn_sequence_grad_cuda(ctx, true); }
void gru_sequence_cuda(const KernelContext& ctx) {
  rnn_check_reset_after(ctx);
  rnn_sequence_cuda(ctx, false);
}
void gru_sequence_grad_cuda(const KernelContext& ctx) {
  rnn_check_reset_after(ctx);
  rnn_sequence_grad_cuda(ctx, false);
}

}  // namespace

static const bool rnn_saved_size_registered_cuda = [] {
  ops::detail::register_rnn_saved_elements(DeviceType::CUDA, rnn_saved_elements_cuda);
  return true;
}();
EMBER_REGISTER_KERNEL(lstm_sequence, CUDA, lstm_sequence_cuda, DType::Float32, DType::Float64);
EMBER_REGISTER_KERNEL(lstm_sequence_grad, CUDA, lstm_sequence_grad_cuda, DType::Float32, DType::Float64);
EMBER_REGISTER_KERNEL(gru_sequence, CUDA, gru_sequence_cuda, DType::Float32, DType::Float64);
EMBER_REGISTER_KERNEL(gru_sequence_grad, CUDA, gru_sequence_grad_cuda, DType::Float32, DType::Float64);

}  // namespace ember
