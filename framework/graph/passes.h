#pragma once
// The compiler's passes over a traced Graph, each in its own file, run in order by optimize().
#include "framework/graph/graph.h"

namespace ember::graph {

// Runs each op whose inputs are all constants once, now, and makes its outputs constants (constant folding):
// not random ops, ops writing into an input, ops whose outputs are returned or hold over 1 MiB, nor ops reading a
// constant something outside the graph holds. Readers of a folded output read the constant.
void fold_constants(Graph& g);

// Makes the readers of a node's outputs read an earlier node's when both compute the same (common-subexpression
// elimination): ops with the same op, inputs, attributes, output specs and device and no effects, reads of one
// variable with no assignment or host call between, views of one value with one shape. Small constants the
// graph alone holds are merged by their bytes first.
void eliminate_common_subexpressions(Graph& g);

// Makes the readers of cast_T(cast_U(a)) read a, where a is a cast's output of type T and U holds every value of T
// (a mixed-precision model's input, cast to the compute dtype, back to float32 and to the compute dtype again).
void fold_round_trip_casts(Graph& g);

// Hands an optimizer update the factors of a small batch's kernel gradient (x^T @ dy, at most
// ops::kFactoredMaxRows rows) instead of the product, when nothing else reads it.
void fold_kernel_gradients(Graph& g);

// Moves a kernel gradient x^T @ dy that only an optimizer's update reads to right before the update, where that
// lowers the memory plan's peak (its buffer no longer held through the rest of the backward pass).
void sink_kernel_gradients(Graph& g);

// Hands a host call that widens half gradients itself (Node::widens_half_gradients: a loss scale optimizer's update)
// the float16 or bfloat16 value where its input is that value cast to float32 and nothing else reads the cast.
void fold_gradient_casts(Graph& g);

// On the CPU where half products compute as float32's (ops::cpu_matmul_widens_half), runs float16 and bfloat16
// matmuls as float32's on float32 buffers holding their half values, each product rounded to its type and back in
// one pass: the half ops' bits without widening the same operands again for each product (half_storage.cpp).
void store_half_in_float32(Graph& g);

// Makes each CPU reduction (sum, mean, max, min, prod) whose reduced axes all have size 1 a view of its input,
// which has its values.
void view_size_one_reductions(Graph& g);

// Removes nodes whose outputs nothing reads and that have no effects (DCE), then the values nobody uses.
void eliminate_dead_code(Graph& g);

// Marks casts of a variable's value to be cached by the variable's version (a mixed-precision predict casts
// each float32 weight once per value, not once per call).
void cache_variable_casts(Graph& g);

// Computes relu_grad(max_pool2d_grad(x, y, dy), x) as max_pool2d_grad(x, y, relu_grad(dy, y)), the same values
// (NaN windows aside), so that a fused conv-relu's output x dies at the pooling gradient, which may write into it.
void move_relu_grad_before_pool_grad(Graph& g);

// Moves a relu after a fused_batch_norm, and an add of a residual before that relu, into the batch norm and its
// gradient (cuDNN's BN_ACTIVATION and BN_ADD_ACTIVATION), where nothing else reads what they made.
void fuse_batch_norm_relu(Graph& g);

// Moves a relu, tanh or sigmoid that alone reads a CPU matmul_bias's or conv2d_bias's output into that op (its
// fused activation, applied in the pass that adds the bias), with the unfused ops' bits.
void fuse_bias_activation(Graph& g);

// Lets elementwise ops write their output into an input that dies there (same shape, dtype and device, its
// buffer held by no variable, input, constant or other live value).
void write_in_place(Graph& g);

// jit_compile's loop fusion: chains of elementwise ops (float32, float16, bfloat16 and bool, on a device with a
// fused kernel: the CPU, CUDA) over one shape become one Fused node that makes them in one pass over the data, with
// the unfused ops' bits; a chain reading a CPU matmul_bias's or conv2d_bias's output takes the product into its node,
// which runs the chain in the product's bias pass.
void fuse_elementwise(Graph& g);

struct OptimizeOptions {
  bool jit_compile = false;  // fuse_elementwise too
};
// The always-on passes, in order, and jit_compile's.
void optimize(Graph& g, OptimizeOptions options = {});

// `g` as traced, to keep beside its optimised form: what runs where a GradientTape records the call, so that the
// tape differentiates the ops eager execution runs (merged or fused ops sum their gradients otherwise); only
// constant folding and dead-code elimination run on it. The constants `g` alone holds are copies, so that the
// passes still find them held by `g` alone (folding and CSE take only those).
Graph traced_copy(const Graph& g);

}  // namespace ember::graph
