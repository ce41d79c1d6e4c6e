#include "layers/simple_rnn.h"

namespace ember::layers {

using ::ember::detail::config_bool;

SimpleRNN::SimpleRNN(int64_t units, SimpleRNNOptions options)
    : RNN("simple_rnn",
          std::make_shared<SimpleRNNCell>(units, detail::rnn_cell_options<SimpleRNNCellOptions>(options, "simple_rnn_cell")),
          RNNOptions{options.return_sequences, options.return_state, options.go_backwards, options.stateful,
                     options.unroll, options.zero_output_for_mask, options.name, options.dtype, options.trainable}),
      units_(units),
      options_(std::move(options)) {}

nlohmann::json SimpleRNN::get_config() const {
  nlohmann::json c = rnn_config();
  c["units"] = units_;
  detail::rnn_write_cell_keys(c, options_);
  c["activity_regularizer"] = nullptr;
  return c;
}

LayerPtr SimpleRNN::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "SimpleRNN '" + base.name + "'";
  SimpleRNNOptions o;
  detail::rnn_read_cell_keys(c, o, who);
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
  return std::make_shared<SimpleRNN>(::ember::detail::config_required_int(c, "units", who), o);
}

EMBER_REGISTER_LAYER(SimpleRNN);

}  // namespace ember::layers
