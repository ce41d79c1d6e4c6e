#include "framework/autodiff/check_numerics.h"

#include <cmath>
#include <mutex>
#include <sstream>

#include "framework/autodiff/gradient_tape.h"
#include "framework/ops/dispatch.h"

namespace ember::debugging {

namespace {

std::mutex g_mu;
int g_hook = -1;

// The first non-finite value of t as text ("nan", "inf", "-inf"), or empty.
std::string first_non_finite(const Tensor& t) {
  if (!is_floating(t.dtype())) return {};
  Tensor h = t.to(Device::cpu());
  std::string found;
  EMBER_DISPATCH_FLOAT(h.dtype(), "check_numerics", {
    const scalar_t* p = static_cast<const scalar_t*>(h.raw_data());
    for (int64_t i = 0; i < h.num_elements(); ++i) {
      const double v = static_cast<double>(p[i]);
      if (!std::isfinite(v)) {
        found = std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
        break;
      }
    }
  });
  return found;
}

void check_hook(const OpRecord& r) {
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    std::string bad = first_non_finite(r.outputs[i]);
    if (bad.empty()) continue;
    std::ostringstream os;
    os << "check_numerics: op '" << op_name(r.op, r.attrs) << "' produced " << bad << " in output " << i << " during the "
       << (in_backward_pass() ? "backward pass (gradient computation)" : "forward pass") << "; inputs:";
    if (r.inputs.empty()) os << " none";
    for (const Tensor& t : r.inputs) os << " " << t.dtype() << " " << t.shape();
    throw InvalidArgument(os.str());
  }
}

}  // namespace

void enable_check_numerics() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_hook < 0) g_hook = add_op_hook(&check_hook);
}

void disable_check_numerics() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_hook >= 0) remove_op_hook(g_hook);
  g_hook = -1;
}

}  // namespace ember::debugging
