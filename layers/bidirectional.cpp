#include "layers/bidirectional.h"

#include "framework/core/config_reader.h"
#include "framework/model/keras_object.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

namespace {

std::string without_prefix(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0 ? s.substr(prefix.size()) : s;
}

// A fresh recurrent layer from `layer`'s config under a new name (Keras recreates both directions so that
// they carry no state of the given layer).
std::shared_ptr<RNN> remade(const RNN& layer, const std::string& name, bool set_go_backwards) {
  nlohmann::json j = serialize_layer(layer);
  j["config"]["name"] = name;
  if (set_go_backwards) j["config"]["go_backwards"] = true;
  return std::dynamic_pointer_cast<RNN>(deserialize_layer(j));
}

bool valid_merge_mode(const std::optional<std::string>& m) {
  return !m || *m == "concat" || *m == "sum" || *m == "mul" || *m == "ave";
}

// x reversed along the time axis 1.
Tensor reverse_time(const Tensor& x) {
  const int64_t steps = x.shape()[1];
  std::vector<int32_t> idx(static_cast<size_t>(steps));
  for (int64_t t = 0; t < steps; ++t) idx[static_cast<size_t>(t)] = static_cast<int32_t>(steps - 1 - t);
  return ops::gather(x, Tensor::from_vector<int32_t>(idx), {.axis = 1});
}

}  // namespace

Bidirectional::Bidirectional(const std::shared_ptr<RNN>& layer, BidirectionalOptions options)
    : Layer("bidirectional", {options.name, options.dtype, options.trainable}), merge_mode_(options.merge_mode) {
  supports_masking_ = true;
  EMBER_CHECK(layer != nullptr, InvalidArgument) << who() << ": the layer must not be null";
  EMBER_CHECK(valid_merge_mode(merge_mode_), InvalidArgument)
      << who() << ": merge_mode must be one of \"concat\", \"sum\", \"mul\", \"ave\" or None, got \"" << *merge_mode_
      << "\"";
  forward_ = remade(*layer, "forward_" + without_prefix(layer->name(), "forward_"), false);
  backward_ = options.backward_layer
                  ? options.backward_layer
                  : remade(*layer, "backward_" + without_prefix(layer->name(), "backward_"), true);
  const RNNOptions& f = forward_->rnn_options();
  const RNNOptions& b = backward_->rnn_options();
  EMBER_CHECK(f.go_backwards != b.go_backwards, InvalidArgument)
      << who() << ": the forward and backward layers must have different go_backwards, got " << f.go_backwards
      << " for both";
  EMBER_CHECK(f.stateful == b.stateful && f.return_sequences == b.return_sequences && f.return_state == b.return_state,
              InvalidArgument)
      << who() << ": the forward and backward layers must agree on stateful, return_sequences and return_state";
  // Keras: masked steps give zeros in both directions' sequences, so the merge lines up.
  forward_->set_zero_output_for_mask(f.return_sequences);
  backward_->set_zero_output_for_mask(b.return_sequences);
  // Keras's variable paths: "bidirectional/forward_lstm/lstm_cell/kernel".
  for (const std::shared_ptr<RNN>& l : {forward_, backward_}) {
    l->set_weight_name_scope(name());
    l->cell()->set_weight_name_scope(name() + "/" + l->name());
  }
  track(forward_);
  track(backward_);
}

void Bidirectional::build(const std::vector<Shape>& shapes) {
  EMBER_CHECK(shapes.at(0).rank() == 3, InvalidArgument)
      << who() << ": expected an input of shape (batch, timesteps, features), got " << shapes[0].to_keras_string();
  const size_t n = forward_->cell()->state_size().size();
  EMBER_CHECK(shapes.size() == 1 || shapes.size() == 1 + 2 * n, InvalidArgument)
      << who() << ": expected the sequences alone or followed by " << 2 * n
      << " initial states (the forward layer's, then the backward layer's), got " << shapes.size() << " inputs";
  if (!forward_->built()) forward_->build_for({shapes[0]});
  if (!backward_->built()) backward_->build_for({shapes[0]});
}

void Bidirectional::check_input_shape(const std::vector<Shape>& shapes) const {
  forward_->check_input_shape({shapes.at(0)});
}

std::vector<Tensor> Bidirectional::call_all(const std::vector<Tensor>& xs, bool training) {
  return run(xs, Tensor(), training);
}

std::vector<Tensor> Bidirectional::call_masked(const std::vector<Tensor>& xs, const std::vector<Tensor>& masks,
                                               bool training) {
  return run(xs, masks.at(0), training);
}

std::vector<Tensor> Bidirectional::run(const std::vector<Tensor>& xs, const Tensor& mask, bool training) {
  const size_t n = forward_->cell()->state_size().size();
  EMBER_CHECK(xs.size() == 1 || xs.size() == 1 + 2 * n, InvalidArgument)
      << who() << ": expected the sequences alone or followed by " << 2 * n << " initial states, got " << xs.size()
      << " inputs";
  // Each direction's call takes the mask from beside its input.
  Tensor seq = xs[0];
  backend::set_keras_mask(seq, mask);
  std::vector<Tensor> fin{seq}, bin{seq};
  if (xs.size() > 1) {
    fin.insert(fin.end(), xs.begin() + 1, xs.begin() + 1 + static_cast<std::ptrdiff_t>(n));
    bin.insert(bin.end(), xs.begin() + 1 + static_cast<std::ptrdiff_t>(n), xs.end());
  }
  std::vector<Tensor> y = forward_->call_outputs(fin, training);
  std::vector<Tensor> y_rev = backward_->call_outputs(bin, training);
  Tensor a = y.at(0), b = y_rev.at(0);
  if (a.dtype() != compute_dtype()) a = ops::cast(a, compute_dtype());
  if (b.dtype() != compute_dtype()) b = ops::cast(b, compute_dtype());
  if (forward_->rnn_options().return_sequences) b = reverse_time(b);
  std::vector<Tensor> out;
  if (!merge_mode_) {
    out = {a, b};
  } else if (*merge_mode_ == "concat") {
    out = {ops::concat({a, b}, -1)};
  } else if (*merge_mode_ == "sum") {
    out = {ops::add(a, b)};
  } else if (*merge_mode_ == "ave") {
    out = {ops::div(ops::add(a, b), Tensor::scalar_of(2.0, a.dtype()))};
  } else {
    out = {ops::mul(a, b)};
  }
  if (forward_->rnn_options().return_state) {
    out.insert(out.end(), y.begin() + 1, y.end());
    out.insert(out.end(), y_rev.begin() + 1, y_rev.end());
  }
  return out;
}

std::vector<Tensor> Bidirectional::compute_mask(const std::vector<Tensor>& /*xs*/, const std::vector<Tensor>& masks) {
  const Tensor m = forward_->rnn_options().return_sequences && !masks.empty() ? masks[0] : Tensor();
  std::vector<Tensor> out(merge_mode_ ? 1 : 2, m);
  if (forward_->rnn_options().return_state) out.resize(out.size() + 2 * forward_->cell()->state_size().size());
  return out;
}

Shape Bidirectional::compute_output_shape(const Shape& s) {
  Shape out = forward_->compute_output_shape(s);
  if (merge_mode_ && *merge_mode_ == "concat") out[out.rank() - 1] *= 2;
  return out;
}

Shape Bidirectional::compute_output_shape(const std::vector<Shape>& shapes) { return compute_output_shape(shapes.at(0)); }

std::vector<Shape> Bidirectional::compute_output_shapes(const std::vector<Shape>& shapes) {
  const Shape y = compute_output_shape(shapes.at(0));
  std::vector<Shape> out(merge_mode_ ? 1 : 2, y);
  if (forward_->rnn_options().return_state) {
    for (int k = 0; k < 2; ++k)
      for (int64_t s : forward_->cell()->state_size()) out.push_back(Shape{shapes[0][0], s});
  }
  return out;
}

void Bidirectional::reset_states() {
  EMBER_CHECK(forward_->rnn_options().stateful, FailedPrecondition)
      << who() << ": reset_states needs a stateful layer";
  forward_->reset_states();
  backward_->reset_states();
}

nlohmann::json Bidirectional::get_config() const {
  nlohmann::json c = base_config();
  c["merge_mode"] = merge_mode_ ? nlohmann::json(*merge_mode_) : nlohmann::json(nullptr);
  // Keras 3's serialized layers, without their build_config: an unbuilt twin gives the same config.
  c["layer"] = serialize_keras_object(*forward_);
  c["backward_layer"] = serialize_keras_object(*backward_);
  c["layer"].erase("build_config");
  c["backward_layer"].erase("build_config");
  return c;
}

LayerPtr Bidirectional::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "Bidirectional '" + base.name + "'";
  auto recurrent = [&](const char* key) {
    EMBER_CHECK(c[key].is_object(), InvalidArgument)
        << who << ": config \"" << key << "\" must be a serialized recurrent layer, got " << c[key].dump().substr(0, 200);
    auto l = std::dynamic_pointer_cast<RNN>(deserialize_layer(c[key]));
    EMBER_CHECK(l != nullptr, InvalidArgument)
        << who << ": config \"" << key << "\" must be a recurrent layer (SimpleRNN, LSTM, GRU or RNN), got class "
        << c[key].value("class_name", std::string("?"));
    return l;
  };
  EMBER_CHECK(c.contains("layer"), InvalidArgument) << who << ": config \"layer\" is required";
  BidirectionalOptions o;
  if (c.contains("merge_mode")) {
    const nlohmann::json& m = c["merge_mode"];
    EMBER_CHECK(m.is_null() || m.is_string(), InvalidArgument)
        << who << ": config \"merge_mode\" must be a string or null, got " << m.dump();
    o.merge_mode = m.is_null() ? std::nullopt : std::optional<std::string>(m.get<std::string>());
  }
  if (c.contains("backward_layer") && !c["backward_layer"].is_null()) o.backward_layer = recurrent("backward_layer");
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<Bidirectional>(recurrent("layer"), o);
}

EMBER_REGISTER_LAYER(Bidirectional);

}  // namespace ember::layers
