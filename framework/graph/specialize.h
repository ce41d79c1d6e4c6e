#pragma once
// A traced graph made again for other sizes of its unknown dimensions, without tracing (reduce_retracing and
// unknown dimensions in an input_signature). See docs/graph_mode.md.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/graph/graph.h"

namespace ember::graph {

// A graph traced with its unknown dimensions at one size, from which the graph for any other size is made:
// every number in it that varies with the size (the values' shapes, shape attributes such as reshape targets,
// broadcast, fill and conv backprop shapes, small constants such as a mean's element count) is an affine
// function of the size, found from traces (probes) at other sizes. Anything else that differs between the
// traces (another op, a host call's or a view's shape baked in a closure, a constant such as 1/size) and the
// template is refused: a trace then serves only its own shapes.
class ShapeTemplate {
 public:
  // `traces[0]` was traced at sizes[0] (its graph is the one kept), the others at the other sizes (at least two
  // more, for a check of each fit). nullptr, with the reason in `why`, when it cannot serve other sizes.
  static std::shared_ptr<const ShapeTemplate> make(const std::vector<Graph>& traces, const std::vector<int64_t>& sizes,
                                                   std::string* why);
  // The graph at `size`, ready for the compiler's passes; nullopt where a dimension would be negative.
  std::optional<Graph> specialize(int64_t size) const;

 private:
  struct Affine {
    size_t slot;  // index into the graph's numbers
    double a, b;  // value = a * size + b
  };
  struct AffineConstant {
    int value;                 // a constant value of the graph
    std::vector<double> a, b;  // per element
  };
  Graph base_;
  std::vector<double> numbers_;  // base_'s numbers
  std::vector<Affine> varying_;
  std::vector<AffineConstant> constants_;
};

namespace detail {
// While it lives, a host call that returns tensors stops the trace on this thread by throwing ProbeStopped
// instead of running (it may change host state, such as a seeded layer's call counter, and it bakes its
// shapes in): a probe trace for a ShapeTemplate must leave nothing behind.
struct ProbeStopped {};
class ProbeScope {
 public:
  ProbeScope();
  ~ProbeScope();
  ProbeScope(const ProbeScope&) = delete;
  ProbeScope& operator=(const ProbeScope&) = delete;

 private:
  bool saved_;
};
bool probing();
}  // namespace detail

}  // namespace ember::graph
