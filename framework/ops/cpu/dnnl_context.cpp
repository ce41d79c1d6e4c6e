#include "framework/ops/cpu/dnnl_context.h"

namespace ember::dnnl_ctx {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

}  // namespace ember::dnnl_ctx
