#pragma once
// Whole-sequence recurrent ops (cuDNN's RNN, TF's CudnnRNN): Keras's LSTM and GRU cells (tanh activation, sigmoid
// gates, with a bias) run over every time step of a batch-major sequence in one op. The CPU kernel projects the
// inputs of all steps in one product and runs one recurrent product per step; the CUDA kernel is cuDNN's. The
// forward's last output is the state its backward reads (a forward/backward pair sharing a saved-state payload):
// a flat tensor in the device's own layout (the gate activations on the CPU, cuDNN's reserve space on a GPU), only
// for passing to the backward op.
#include <vector>

#include "framework/core/tensor.h"

namespace ember::ops {

// Keras's LSTM over x (batch, steps, features) from h0 and c0 (batch, units), with kernel (features, 4 * units),
// recurrent_kernel (units, 4 * units) and bias (4 * units), gates in Keras's order i, f, c, o. Returns {y (batch,
// steps, units): every step's h, h and c after the last step, saved: the backward's state}. Float32 or float64, one
// dtype for all.
std::vector<Tensor> lstm_sequence(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& kernel,
                                  const Tensor& recurrent_kernel, const Tensor& bias);
// lstm_sequence's backward: {dx, dh0, dc0, dkernel, drecurrent_kernel, dbias} from its inputs, its outputs y and
// saved and the gradients of y, h and c.
std::vector<Tensor> lstm_sequence_grad(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& kernel,
                                       const Tensor& recurrent_kernel, const Tensor& bias, const Tensor& y,
                                       const Tensor& saved, const Tensor& dy, const Tensor& dh, const Tensor& dc);

// Keras's GRU over x (batch, steps, features) from h0 (batch, units), with kernel (features, 3 * units),
// recurrent_kernel (units, 3 * units) and bias (2, 3 * units) with reset_after (row 0 the input bias, row 1 the
// recurrent one; the reset gate applied after the recurrent product, cuDNN's form), else (3 * units); gates in Keras's
// order z, r, h. Returns {y (batch, steps, units), h after the last step, saved: the backward's state}.
std::vector<Tensor> gru_sequence(const Tensor& x, const Tensor& h0, const Tensor& kernel, const Tensor& recurrent_kernel,
                                 const Tensor& bias, bool reset_after);
// gru_sequence's backward: {dx, dh0, dkernel, drecurrent_kernel, dbias} from its inputs, its outputs y and saved and
// the gradients of y and h.
std::vector<Tensor> gru_sequence_grad(const Tensor& x, const Tensor& h0, const Tensor& kernel,
                                      const Tensor& recurrent_kernel, const Tensor& bias, const Tensor& y,
                                      const Tensor& saved, const Tensor& dy, const Tensor& dh, bool reset_after);

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
}  // namespace detail

}  // namespace ember::ops
