#pragma once
// The compiler's passes over a traced Graph, each in its own file, run in order by optimize().
#include "framework/graph/graph.h"

namespace ember::graph {

// Hands an optimizer update the factors of a small batch's kernel gradient (x^T @ dy, at most
// ops::kFactoredMaxRows rows) instead of the product, when nothing else reads it.
void fold_kernel_gradients(Graph& g);

// Removes nodes whose outputs nothing reads and that have no effects (DCE), then the values nobody uses.
void eliminate_dead_code(Graph& g);

// Marks casts of a variable's value to be cached by the variable's version (a mixed-precision predict casts
// each float32 weight once per value, not once per call).
void cache_variable_casts(Graph& g);

// Lets elementwise ops write their output into an input that dies there (same shape, dtype and device, its
// buffer held by no variable, input, constant or other live value).
void write_in_place(Graph& g);

// The always-on passes, in order.
void optimize(Graph& g);

}  // namespace ember::graph
