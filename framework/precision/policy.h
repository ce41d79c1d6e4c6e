#pragma once
// Dtype policies (TF: tf.keras.mixed_precision.Policy): the dtype a layer computes in and the dtype of
// its variables. The mixed-precision issue adds autocasting details and loss scaling.
#include <string>

#include "framework/core/dtype.h"

namespace ember::mixed_precision {

class Policy {
 public:
  // "float32", "float64", "float16", "bfloat16", "mixed_float16", "mixed_bfloat16"; others: InvalidArgument.
  Policy(const std::string& name = "float32");
  Policy(const char* name) : Policy(std::string(name)) {}
  const std::string& name() const { return name_; }
  DType compute_dtype() const { return compute_; }
  DType variable_dtype() const { return variable_; }
  bool operator==(const Policy& o) const { return name_ == o.name_; }

 private:
  std::string name_;
  DType compute_;
  DType variable_;
};

// The policy layers get when their dtype option is empty (TF: set_global_policy / global_policy).
void set_global_policy(const Policy& policy);
Policy global_policy();

}  // namespace ember::mixed_precision
