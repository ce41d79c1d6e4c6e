#include "layers/gru.h"

namespace ember::layers {

using ::ember::detail::config_bool;

GRU::GRU(int64_t units, GRUOptions options)
    : RNN("gru",
          std::make_shared<GRUCell>(units, detail::rnn_cell_options<GRUCellOptions>(options, "gru_cell")),
          RNNOptions{options.return_sequences, options.return_state, options.go_backwards, options.stateful,
                     options.unroll, options.zero_output_for_mask, options.name, options.dtype, options.trainable}),
      units_(units),
      options_(std::move(options)) {
  fused_sequence_allowed_ = true;
}

nlohmann::json GRU::get_config() const {
  nlohmann::json c = rnn_config();
  c["units"] = units_;
  detail::rnn_write_cell_keys(c, options_);
  c["reset_after"] = options_.reset_after;
  c["activity_regularizer"] = nullptr;
  c["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json(nullptr);
  return c;
}

LayerPtr GRU::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "GRU '" + base.name + "'";
  GRUOptions o;
  detail::rnn_read_cell_keys(c, o, who);
  o.reset_after = config_bool(c, "reset_after", true, who);
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
  return std::make_shared<GRU>(::ember::detail::config_required_int(c, "units", who), o);
}

EMBER_REGISTER_LAYER(GRU);

}  // namespace ember::layers
