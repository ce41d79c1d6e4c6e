#include "framework/graph/executor.h"

#include <utility>

#include "framework/autodiff/gradient_tape.h"
#include "framework/ops/random.h"

namespace ember::graph {

Executable::Executable(Graph graph) : graph_(std::move(graph)) {
  const size_t nv = graph_.values.size();
  std::vector<int> last_use(nv, -1);
  for (size_t k = 0; k < graph_.nodes.size(); ++k)
    for (int v : graph_.nodes[k].inputs)
      if (v >= 0) last_use[static_cast<size_t>(v)] = static_cast<int>(k);
  // Values never read are dropped right after the node that makes them.
  for (size_t k = 0; k < graph_.nodes.size(); ++k)
    for (int v : graph_.nodes[k].outputs)
      if (v >= 0 && last_use[static_cast<size_t>(v)] < 0) last_use[static_cast<size_t>(v)] = static_cast<int>(k);
  for (int v : graph_.outputs) last_use[static_cast<size_t>(v)] = -1;  // the caller's
  release_after_.assign(graph_.nodes.size(), {});
  for (size_t v = 0; v < nv; ++v)
    if (last_use[v] >= 0) release_after_[static_cast<size_t>(last_use[v])].push_back(static_cast<int>(v));
  for (size_t v = 0; v < nv; ++v)
    if (graph_.values[v].constant.defined()) constants_.push_back(static_cast<int>(v));
}

std::vector<Tensor> Executable::run(std::span<const Tensor> inputs) const {
  std::vector<Tensor> vals(graph_.values.size());
  for (size_t i = 0; i < graph_.inputs.size(); ++i) vals[static_cast<size_t>(graph_.inputs[i])] = inputs[i];
  for (int v : constants_) vals[static_cast<size_t>(v)] = graph_.values[static_cast<size_t>(v)].constant;
  std::vector<Tensor> in, out;
  for (size_t k = 0; k < graph_.nodes.size(); ++k) {
    const Node& n = graph_.nodes[k];
    for (int v : n.inputs) in.push_back(v >= 0 ? vals[static_cast<size_t>(v)] : Tensor());
    switch (n.kind) {
      case NodeKind::Op: {
        out.assign(n.outputs.size(), Tensor());
        if (n.cast_cache && !any_tape_records(in)) {
          std::lock_guard<std::mutex> lock(n.cast_cache->mu);
          if (!n.cast_cache->value.defined() || n.cast_cache->version != n.cast_of.version()) {
            run_op_into(n.op, in, n.specs, out, n.attrs, n.device);
            n.cast_cache->value = out[0];
            n.cast_cache->version = n.cast_of.version();
          }
          out[0] = n.cast_cache->value;
        } else if (const auto* random = std::get_if<RandomAttrs>(&n.attrs)) {
          RandomAttrs fresh = *random;
          random::detail::redraw(fresh);
          run_op_into(n.op, in, n.specs, out, Attrs(std::move(fresh)), n.device);
        } else if (n.in_place_input >= 0 && !any_tape_records(in)) {
          OutputSpec spec = n.specs[0];
          spec.alias_input = n.in_place_input;
          // The value table's reference goes first, so that the buffer's only holders are this node's.
          vals[static_cast<size_t>(n.inputs[static_cast<size_t>(n.in_place_input)])] = Tensor();
          run_op_into(n.op, in, std::span<const OutputSpec>(&spec, 1), out, n.attrs, n.device);
        } else {
          run_op_into(n.op, in, n.specs, out, n.attrs, n.device);
        }
        break;
      }
      case NodeKind::ReadVariable:
        out = {n.variable.read_value()};
        break;
      case NodeKind::AssignVariable: {
        Variable v = n.variable;
        v.assign(in[0]);
        out.clear();
        break;
      }
      case NodeKind::Derived:
        out = {n.remake(in[0])};
        break;
      case NodeKind::HostCall:
        out = n.host(in);
        EMBER_CHECK(out.size() == n.outputs.size(), Internal)
            << "host_call '" << n.name << "': returned " << out.size() << " tensors on replay, " << n.outputs.size()
            << " while traced";
        break;
    }
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] >= 0) vals[static_cast<size_t>(n.outputs[i])] = std::move(out[i]);
    in.clear();  // before the releases: a buffer's last holders go with them
    for (int v : release_after_[k]) vals[static_cast<size_t>(v)] = Tensor();
  }
  std::vector<Tensor> result;
  result.reserve(graph_.outputs.size());
  for (int v : graph_.outputs) result.push_back(vals[static_cast<size_t>(v)]);
  return result;
}

}  // namespace ember::graph
