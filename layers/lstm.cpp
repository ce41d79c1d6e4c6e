#include "layers/lstm.h"

namespace ember::layers {

using ::ember::detail::config_bool;

LSTM::LSTM(int64_t units, LSTMOptions options)
    : RNN("lstm",
          std::make_shared<LSTMCell>(units, detail::rnn_cell_options<LSTMCellOptions>(options, "lstm_cell")),
          RNNOptions{options.return_sequences, options.return_state, options.go_backwards, options.stateful,
                     options.unroll, options.zero_output_for_mask, options.name, options.dtype, options.trainable}),
      units_(units),
      options_(std::move(options)) {
  fused_sequence_allowed_ = true;
}

nlohmann::json LSTM::get_config() const {
  nlohmann::json c = rnn_config();
  c["units"] = units_;
  detail::rnn_write_cell_keys(c, options_);
  c["unit_forget_bias"] = options_.unit_forget_bias;
  c["activity_regularizer"] = nullptr;
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json(nullptr);
  return c;
}

LayerPtr LSTM::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "LSTM '" + base.name + "'";
  LSTMOptions o;
  detail::rnn_read_cell_keys(c, o, who);
  o.unit_forget_bias = config_bool(c, "unit_forget_bias", true, who);
  const RNNOptions r = rnn_options_from_config(c, who);
  o.return_sequences = r.return_sequences;
  o.return_state = r.return_state;
  o.go_backwards = r.go_backwards;
  o.stateful = r.stateful;
  o.unroll = r.unroll;
  o.zero_output_for_mask = r.zero_output_for_mask;
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<LSTM>(::ember::detail::config_required_int(c, "units", who), o);
}

EMBER_REGISTER_LAYER(LSTM);

}  // namespace ember::layers
