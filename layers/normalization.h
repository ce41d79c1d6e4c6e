#pragma once
// Normalization (Keras: keras.layers.Normalization): (x - mean) / max(sqrt(variance), 1e-7) per position of the
// kept `axis` (invert: the reverse). mean and variance come from the options, or from adapt(data), which
// stores them in the non-trainable weights "mean", "variance" and "count" (int64, as Keras keeps it) that
// model files save and load.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/model/layer.h"

namespace ember::data {
class Dataset;
}  // namespace ember::data

namespace ember::layers {

struct NormalizationOptions {
  // The axes that keep their own mean and variance (Keras's int or tuple); empty: one mean and variance for all
  // (Keras's axis=None).
  std::vector<int64_t> axis = {-1};
  // Set both (one number, or one value per kept position) to skip adapt; no weights then, as in Keras.
  std::optional<std::vector<double>> mean{};
  std::optional<std::vector<double>> variance{};
  bool invert = false;
  std::string name{};
  std::string dtype{};
  bool trainable = true;
};

class Normalization : public Layer {
  EMBER_LAYER(Normalization)
  explicit Normalization(NormalizationOptions options = {});
  static LayerPtr from_config(const nlohmann::json& config);

  // Keras's adapt: the mean and (population) variance of data over the axes not kept. A tensor is one batch; a
  // dataset's elements (their first component) are batches, combined with Keras's running update (a dataset of
  // rank-1 elements is batched by 128 first, as Keras does).
  void adapt(const Tensor& data);
  void adapt(const data::Dataset& data);

  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;
  Shape compute_output_shape(const Shape& input_shape) override { return input_shape; }
  DType compute_output_dtype(const std::vector<DType>& /*input_dtypes*/) const override { return compute_dtype(); }
  nlohmann::json get_config() const override;

  const NormalizationOptions& options() const { return options_; }

 private:
  void check_adapt_shape(const Shape& s) const;
  // Kept axes (non-negative, sorted) and the rest, for rank.
  void set_axes(int64_t rank);
  void store(const Tensor& mean, const Tensor& variance);

  NormalizationOptions options_;
  std::vector<int64_t> keep_, reduce_;
  Shape stats_shape_, broadcast_shape_;
  Variable mean_, variance_, count_;
};

}  // namespace ember::layers
