#include "framework/ops/recurrent.h"

#include <sstream>
#include <string>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"

namespace ember::ops {

namespace {

using detail::RnnSavedElements;

struct RnnSequenceDims {
  int64_t batch, steps, features, units;
};

std::string rnn_describe(std::initializer_list<std::pair<const char*, const Tensor*>> tensors) {
  std::ostringstream os;
  const char* sep = "";
  for (const auto& [name, t] : tensors) {
    os << sep << name << " " << t->shape() << " " << dtype_name(t->dtype());
    sep = ", ";
  }
  return os.str();
}

// Checks the shapes and dtypes of a sequence op's inputs (gates: 4 for the LSTM, 3 for the GRU) and returns its sizes.
RnnSequenceDims rnn_check_sequence(const char* op, int gates, const Tensor& x, std::initializer_list<const Tensor*> states,
                            const Tensor& kernel, const Tensor& recurrent, const Tensor& bias, const Shape& bias_shape,
                            const std::string& got) {
  EMBER_CHECK(x.rank() == 3 && x.shape()[1] > 0 && kernel.rank() == 2, InvalidArgument)
      << op << ": expected x (batch, steps > 0, features) and a kernel (features, " << gates << " * units), got " << got;
  const RnnSequenceDims d{x.shape()[0], x.shape()[1], x.shape()[2], kernel.shape()[1] / gates};
  bool ok = d.units > 0 && kernel.shape() == Shape({d.features, gates * d.units}) &&
            recurrent.shape() == Shape({d.units, gates * d.units}) && bias.shape() == bias_shape;
  for (const Tensor* s : states) ok = ok && s->shape() == Shape({d.batch, d.units});
  EMBER_CHECK(ok, InvalidArgument) << op << ": expected x (batch, steps, features), states (batch, units), kernel "
                                   << "(features, " << gates << " * units), recurrent_kernel (units, " << gates
                                   << " * units) and bias " << bias_shape << ", got " << got;
  const DType dt = x.dtype();
  ok = dt == DType::Float32 || dt == DType::Float64;
  for (const Tensor* t : states) ok = ok && t->dtype() == dt;
  ok = ok && kernel.dtype() == dt && recurrent.dtype() == dt && bias.dtype() == dt;
  EMBER_CHECK(ok, InvalidArgument) << op << ": expected float32 or float64 inputs of one dtype, got " << got;
  return d;
}

Shape rnn_gru_bias_shape(const Tensor& kernel, bool reset_after) {
  const int64_t width = kernel.rank() == 2 ? kernel.shape()[1] : 0;
  return reset_after ? Shape{2, width} : Shape{width};
}

void rnn_check_like(const char* op, const char* what, const Tensor& t, const Shape& shape, DType dt) {
  EMBER_CHECK(t.shape() == shape && t.dtype() == dt, InvalidArgument)
      << op << ": expected " << what << " of shape " << shape << " " << dtype_name(dt) << ", got " << t.shape() << " "
      << dtype_name(t.dtype());
}

// The op's tensor inputs: `inputs`, then sequence_lengths when given, checked to be int32 (batch).
std::vector<Tensor> rnn_inputs(const char* op, std::initializer_list<Tensor> inputs, const Tensor& lengths,
                               int64_t batch) {
  std::vector<Tensor> all(inputs);
  if (!lengths.defined()) return all;
  EMBER_CHECK(lengths.dtype() == DType::Int32 && lengths.shape() == Shape({batch}), InvalidArgument)
      << op << ": expected sequence_lengths of shape " << Shape({batch}) << " int32 (one length per sequence), got "
      << lengths.shape() << " " << dtype_name(lengths.dtype());
  all.push_back(lengths);
  return all;
}

RnnSavedElements& rnn_saved_elements_fn(DeviceType device) {
  static RnnSavedElements fns[kNumDeviceTypes] = {};
  return fns[static_cast<int>(device)];
}

// The saved state's spec on x's device.
OutputSpec rnn_saved_spec(const char* op, bool lstm, bool reset_after, const Tensor& x, const RnnSequenceDims& d) {
  const RnnSavedElements fn = rnn_saved_elements_fn(x.device().type());
  EMBER_CHECK(fn != nullptr, Unimplemented) << op << ": no kernel for device " << x.device();
  return {Shape{fn({lstm, reset_after, d.batch, d.steps, d.features, d.units, x.dtype(), x.device()})}, x.dtype()};
}

}  // namespace

namespace detail {
void register_rnn_saved_elements(DeviceType device, RnnSavedElements fn) { rnn_saved_elements_fn(device) = fn; }

std::vector<int32_t> rnn_sequence_lengths(const char* op, const Tensor& sequence_lengths, int64_t steps) {
  std::vector<int32_t> lengths = sequence_lengths.to_vector<int32_t>();
  for (size_t b = 0; b < lengths.size(); ++b)
    EMBER_CHECK(lengths[b] >= 0 && lengths[b] <= steps, InvalidArgument)
        << op << ": expected sequence_lengths in [0, " << steps << "] (x's steps), got " << lengths[b]
        << " for sequence " << b;
  return lengths;
}
}  // namespace detail

std::vector<Tensor> lstm_sequence(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& kernel,
                                  const Tensor& recurrent_kernel, const Tensor& bias, const Tensor& sequence_lengths) {
  const std::string got = rnn_describe({{"x", &x}, {"h0", &h0}, {"c0", &c0}, {"kernel", &kernel},
                                    {"recurrent_kernel", &recurrent_kernel}, {"bias", &bias}});
  const Shape bias_shape{kernel.rank() == 2 ? kernel.shape()[1] : 0};
  const RnnSequenceDims d = rnn_check_sequence("lstm_sequence", 4, x, {&h0, &c0}, kernel, recurrent_kernel, bias, bias_shape, got);
  const DType dt = x.dtype();
  const OutputSpec specs[] = {{Shape{d.batch, d.steps, d.units}, dt}, {h0.shape(), dt}, {c0.shape(), dt},
                              rnn_saved_spec("lstm_sequence", true, false, x, d)};
  return run_op(OpId::lstm_sequence,
                rnn_inputs("lstm_sequence", {x, h0, c0, kernel, recurrent_kernel, bias}, sequence_lengths, d.batch),
                specs);
}

std::vector<Tensor> lstm_sequence_grad(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& kernel,
                                       const Tensor& recurrent_kernel, const Tensor& bias, const Tensor& y,
                                       const Tensor& saved, const Tensor& dy, const Tensor& dh, const Tensor& dc,
                                       const Tensor& sequence_lengths) {
  const char* op = "lstm_sequence_grad";
  const std::string got = rnn_describe({{"x", &x}, {"h0", &h0}, {"c0", &c0}, {"kernel", &kernel},
                                    {"recurrent_kernel", &recurrent_kernel}, {"bias", &bias}});
  const Shape bias_shape{kernel.rank() == 2 ? kernel.shape()[1] : 0};
  const RnnSequenceDims d = rnn_check_sequence(op, 4, x, {&h0, &c0}, kernel, recurrent_kernel, bias, bias_shape, got);
  const DType dt = x.dtype();
  rnn_check_like(op, "y", y, {d.batch, d.steps, d.units}, dt);
  rnn_check_like(op, "dy", dy, y.shape(), dt);
  rnn_check_like(op, "dh", dh, h0.shape(), dt);
  rnn_check_like(op, "dc", dc, c0.shape(), dt);
  rnn_check_like(op, "saved", saved, rnn_saved_spec(op, true, false, x, d).shape, dt);
  const OutputSpec specs[] = {{x.shape(), dt},      {h0.shape(), dt},     {c0.shape(), dt},
                              {kernel.shape(), dt}, {recurrent_kernel.shape(), dt}, {bias.shape(), dt}};
  return run_op(OpId::lstm_sequence_grad,
                rnn_inputs(op, {x, h0, c0, kernel, recurrent_kernel, bias, y, saved, dy, dh, dc}, sequence_lengths,
                           d.batch),
                specs);
}

std::vector<Tensor> gru_sequence(const Tensor& x, const Tensor& h0, const Tensor& kernel, const Tensor& recurrent_kernel,
                                 const Tensor& bias, bool reset_after, const Tensor& sequence_lengths) {
  const std::string got = rnn_describe(
      {{"x", &x}, {"h0", &h0}, {"kernel", &kernel}, {"recurrent_kernel", &recurrent_kernel}, {"bias", &bias}});
  const RnnSequenceDims d = rnn_check_sequence("gru_sequence", 3, x, {&h0}, kernel, recurrent_kernel, bias,
                                        rnn_gru_bias_shape(kernel, reset_after), got);
  const DType dt = x.dtype();
  const OutputSpec specs[] = {{Shape{d.batch, d.steps, d.units}, dt}, {h0.shape(), dt},
                              rnn_saved_spec("gru_sequence", false, reset_after, x, d)};
  return run_op(OpId::gru_sequence,
                rnn_inputs("gru_sequence", {x, h0, kernel, recurrent_kernel, bias}, sequence_lengths, d.batch), specs,
                RnnSequenceAttrs{reset_after});
}

std::vector<Tensor> gru_sequence_grad(const Tensor& x, const Tensor& h0, const Tensor& kernel,
                                      const Tensor& recurrent_kernel, const Tensor& bias, const Tensor& y,
                                      const Tensor& saved, const Tensor& dy, const Tensor& dh, bool reset_after,
                                      const Tensor& sequence_lengths) {
  const char* op = "gru_sequence_grad";
  const std::string got = rnn_describe(
      {{"x", &x}, {"h0", &h0}, {"kernel", &kernel}, {"recurrent_kernel", &recurrent_kernel}, {"bias", &bias}});
  const RnnSequenceDims d =
      rnn_check_sequence(op, 3, x, {&h0}, kernel, recurrent_kernel, bias, rnn_gru_bias_shape(kernel, reset_after), got);
  const DType dt = x.dtype();
  rnn_check_like(op, "y", y, {d.batch, d.steps, d.units}, dt);
  rnn_check_like(op, "dy", dy, y.shape(), dt);
  rnn_check_like(op, "dh", dh, h0.shape(), dt);
  rnn_check_like(op, "saved", saved, rnn_saved_spec(op, false, reset_after, x, d).shape, dt);
  const OutputSpec specs[] = {
      {x.shape(), dt}, {h0.shape(), dt}, {kernel.shape(), dt}, {recurrent_kernel.shape(), dt}, {bias.shape(), dt}};
  return run_op(OpId::gru_sequence_grad,
                rnn_inputs(op, {x, h0, kernel, recurrent_kernel, bias, y, saved, dy, dh}, sequence_lengths, d.batch),
                specs, RnnSequenceAttrs{reset_after});
}

}  // namespace ember::ops
