#include "layers/identity.h"

namespace ember::layers {

LayerPtr Identity::from_config(const nlohmann::json& c) { return std::make_shared<Identity>(options_from_config(c)); }

EMBER_REGISTER_LAYER(Identity);

}  // namespace ember::layers
