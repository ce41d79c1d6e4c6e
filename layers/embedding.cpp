#include "layers/embedding.h"

#include "framework/core/config_reader.h"
#include "framework/core/error_context.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"

namespace ember::layers {

using ::ember::detail::config_bool;
using ::ember::detail::config_required_int;

Embedding::Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : Layer("embedding", {options.name, options.dtype, options.trainable}),
      input_dim_(input_dim),
      output_dim_(output_dim),
      options_(std::move(options)) {
  EMBER_CHECK(input_dim > 0, InvalidArgument)
      << "Embedding '" << name() << "': input_dim must be a positive integer, got " << input_dim;
  EMBER_CHECK(output_dim > 0, InvalidArgument)
      << "Embedding '" << name() << "': output_dim must be a positive integer, got " << output_dim;
  supports_masking_ = options_.mask_zero;
}

std::vector<Tensor> Embedding::compute_mask(const std::vector<Tensor>& xs, const std::vector<Tensor>& /*masks*/) {
  if (!options_.mask_zero) return {};
  return {ops::not_equal(xs.at(0), Tensor::scalar_of(0, xs.at(0).dtype()))};
}

void Embedding::build(const Shape& input_shape) {
  embeddings_ = add_weight("embeddings", {input_dim_, output_dim_}, options_.embeddings_initializer, true,
                           options_.embeddings_regularizer);
}

Tensor Embedding::call(const Tensor& x, bool training) {
  const Tensor indices = x.dtype() == DType::Int32 || x.dtype() == DType::Int64 ? x : ops::cast(x, DType::Int32);
  // Gather from the variable itself, then cast the rows (Keras: autocast off, take, cast): under a mixed
  // policy only the looked-up rows are converted, not the whole table.
  const Tensor rows = with_error_context<InvalidArgument>(
      [name = name(), input_dim = input_dim_](const InvalidArgument& e) {
        throw InvalidArgument("Embedding '" + name + "' (input_dim " + std::to_string(input_dim) + "): " + e.what());
      },
      [&] { return ops::gather(embeddings_, indices); });
  return rows.dtype() == compute_dtype() ? rows : ops::cast(rows, compute_dtype());
}

Shape Embedding::compute_output_shape(const Shape& input_shape) {
  Shape out = input_shape;
  out.push_back(output_dim_);
  return out;
}

nlohmann::json Embedding::get_config() const {
  nlohmann::json c = base_config();
  c["input_dim"] = input_dim_;
  c["output_dim"] = output_dim_;
  c["embeddings_initializer"] = options_.embeddings_initializer.to_json();
  c["embeddings_regularizer"] = options_.embeddings_regularizer.to_json();
  c["activity_regularizer"] = nullptr;
  c["embeddings_constraint"] = nullptr;
  c["mask_zero"] = options_.mask_zero;
  c["quantization_config"] = nullptr;
  return c;
}

LayerPtr Embedding::from_config(const nlohmann::json& c) {
  LayerOptions base = options_from_config(c);
  const std::string who = "Embedding '" + base.name + "'";
  EmbeddingOptions o;
  if (c.contains("embeddings_initializer"))
    o.embeddings_initializer = Initializer::from_json(c["embeddings_initializer"]);
  if (c.contains("embeddings_regularizer"))
    o.embeddings_regularizer = Regularizer::from_json(c["embeddings_regularizer"]);
  o.mask_zero = config_bool(c, "mask_zero", false, who);
  o.name = base.name;
  o.dtype = base.dtype;
  o.trainable = base.trainable;
  return std::make_shared<Embedding>(config_required_int(c, "input_dim", who), config_required_int(c, "output_dim", who), o);
}

EMBER_REGISTER_LAYER(Embedding);

}  // namespace ember::layers
