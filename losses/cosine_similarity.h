#pragma once
// CosineSimilarity (Keras: keras.losses.CosineSimilarity): -sum(l2_normalize(y_true) * l2_normalize(y_pred))
// along axis; the inverse norms are capped at 1e7 (so zero vectors give 0).
#include "losses/loss.h"

namespace ember::losses {

struct CosineSimilarityOptions {
  int64_t axis = -1;
  std::string reduction = "sum_over_batch_size";
  std::string name = {};  // empty: "cosine_similarity"
};

class CosineSimilarity : public Loss {
  EMBER_LOSS(CosineSimilarity)
  explicit CosineSimilarity(CosineSimilarityOptions options = {});
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override;
  // Keras's keys plus "axis" (Keras 3.15 leaves it out of get_config).
  nlohmann::json get_config() const override;

 private:
  int64_t axis_;
};

}  // namespace ember::losses
