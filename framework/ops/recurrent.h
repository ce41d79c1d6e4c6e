#pragma once
// Whole-sequence recurrent ops (cuDNN's RNN, TF's CudnnRNN): Keras's LSTM and GRU cells (tanh activation, sigmoid
// gates, with a bias) run over every time step of a batch-major sequence in one op. The CPU kernel projects the
// inputs of all steps in one product and runs one recurrent product per step; the CUDA kernel is cuDNN's. The
// forward's last output is the state its backward reads (a forward/backward pair sharing a saved-state payload):
// a flat tensor in the device's own layout (the gate activations on the CPU, cuDNN's reserve space on a GPU), only
// for passing to the backward op.
//
// Each op takes optional sequence_lengths (int32 (batch), each in [0, steps], on x's device; cuDNN's seqLengthArray,
// Keras's cuDNN path for a right-padded mask): sequence b runs its first sequence_lengths[b] steps only. Its outputs
// at the steps after are zeros, its h (and c) are the states after its last step (h0, c0 for a length of 0), and the
// gradients flowing into those later outputs are ignored. A length outside [0, steps] is InvalidArgument when the
// kernel runs.
#include <vector>

#include "framework/core/tensor.h"

namespace ember::ops {

// Keras's LSTM over x (batch, steps, features) from h0 and c0 (batch, units), with kernel (features, 4 * units),
// recurrent_kernel (units, 4 * units) and bias (4 * units), gates in Keras's order i, f, c, o. Returns {y (batch,
// steps, units): every step's h, h and c after the last step, saved: the backward's state}. Float32 or float64, one
// dtype for all.
std::vector<Tensor> lstm_sequence(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& kernel,
                                  const Tensor& recurrent_kernel, const Tensor& bias,
                                  const Tensor& sequence_lengths = Tensor());
// lstm_sequence's backward: {dx, dh0, dc0, dkernel, drecurrent_kernel, dbias} from its inputs, its outputs y and
// saved and the gradients of y, h and c; sequence_lengths as given to the forward.
std::vector<Tensor> lstm_sequence_grad(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& kernel,
                                       const Tensor& recurrent_kernel, const Tensor& bias, const Tensor& y,
                                       const Tensor& saved, const Tensor& dy, const Tensor& dh, const Tensor& dc,
                                       const Tensor& sequence_lengths = Tensor());

// Keras's GRU over x (batch, steps, features) from h0 (batch, units), with kernel (features, 3 * units),
// recurrent_kernel (units, 3 * units) and bias (2, 3 * units) with reset_after (row 0 the input bias, row 1 the
// recurrent one; the reset gate applied after the recurrent product, cuDNN's form), else (3 * units); gates in Keras's
// order z, r, h. Returns {y (batch, steps, units), h after the last step, saved: the backward's state}.
std::vector<Tensor> gru_sequence(const Tensor& x, const Tensor& h0, const Tensor& kernel, const Tensor& recurrent_kernel,
                                 const Tensor& bias, bool reset_after, const Tensor& sequence_lengths = Tensor());
// gru_sequence's backward: {dx, dh0, dkernel, drecurrent_kernel, dbias} from its inputs, its outputs y and saved and
// the gradients of y and h; sequence_lengths as given to the forward.
std::vector<Tensor> gru_sequence_grad(const Tensor& x, const Tensor& h0, const Tensor& kernel,
                                      const Tensor& recurrent_kernel, const Tensor& bias, const Tensor& y,
                                      const Tensor& saved, const Tensor& dy, const Tensor& dh, bool reset_after,
                                      const Tensor& sequence_lengths = Tensor());

namespace detail {
// Internal: the size of the saved state, which each device's kernel file registers for its layout.
struct RnnSavedQuery {
  bool lstm;
  bool reset_after;
  int64_t batch, steps, features, units;
  DType dtype;
  Device device;
};
using RnnSavedElements = int64_t (*)(const RnnSavedQuery&);
void register_rnn_saved_elements(DeviceType device, RnnSavedElements fn);
// Internal, for the kernels: the values of a sequence op's sequence_lengths on the host, each checked to be in
// [0, steps] (InvalidArgument naming `op` otherwise).
std::vector<int32_t> rnn_sequence_lengths(const char* op, const Tensor& sequence_lengths, int64_t steps);
}  // namespace detail

}  // namespace ember::ops
