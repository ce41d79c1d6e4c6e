// GradientTape basics (TF: tf.GradientTape): the derivative of y = x^2 + 2x + 1 at x = 3, a
// constant's gradient, a second derivative and the gradients of a layer's weights.
#include <cmath>
#include <iostream>

#include "framework/ember.h"
using namespace ember;

// Prints what was computed and whether it is what calculus says; false when it is not.
bool expect(const char* what, const Tensor& got, float want) {
  float value = got.item<float>();
  std::cout << what << " = " << value << " (expected " << want << ")\n";
  return std::abs(value - want) < 1e-5f;
}

int main() {
  bool ok = true;

  // A trainable Variable read while a tape is alive is watched: the ops computed from it are recorded.
  Variable x(3.0f);  // a float32 scalar variable
  {
    GradientTape tape;
    Tensor y = x * x + 2.0 * x + 1.0;
    // dy/dx = 2x + 2 = 8 at x = 3. gradient() of one source gives one tensor; of a list, one each.
    Tensor dy_dx = tape.gradient(y, x);
    ok &= expect("dy/dx at x = 3", dy_dx, 8.0f);
  }

  // A plain Tensor is a constant: watch it to differentiate with respect to it.
  Tensor c = Tensor::scalar(0.0f);
  {
    GradientTape tape;
    tape.watch(c);
    Tensor s = ops::sin(c);
    ok &= expect("d sin(c)/dc at c = 0", tape.gradient(s, c), 1.0f);  // cos(0)
  }

  // Tapes nest: the outer one records the inner one's gradient computation, giving d2y/dx2 = 2.
  {
    GradientTape outer;
    Tensor dy_dx;
    {
      GradientTape inner;
      Tensor y = x * x + 2.0 * x + 1.0;
      dy_dx = inner.gradient(y, x);
    }
    ok &= expect("d2y/dx2", outer.gradient(dy_dx, x), 2.0f);
  }

  // The gradients of a layer's weights, as a training step computes them. A persistent tape allows
  // several gradient() calls.
  layers::Dense dense(1, {.kernel_initializer = "ones"});
  Tensor inputs = Tensor::from_vector<float>({1, 2, 3}, {1, 3});
  {
    GradientTape tape({.persistent = true});
    Tensor out = dense(inputs);                  // 1 + 2 + 3 + bias 0 = 6
    Tensor loss = ops::reduce_sum(ops::square(out));  // 36
    std::vector<Variable> weights = dense.trainable_weights();  // kernel [3, 1], bias [1]
    std::vector<Tensor> grads = tape.gradient(loss, weights);
    // d loss/d bias = 2 * out = 12; d loss/d kernel[i] = 2 * out * inputs[i] = 12, 24, 36.
    ok &= expect("d loss/d bias", grads[1], 12.0f);
    ok &= expect("d loss/d kernel[2]", ops::reduce_max(grads[0]), 36.0f);
    ok &= expect("d out/d bias (second call, persistent tape)", tape.gradient(out, weights[1]), 1.0f);
  }

  std::cout << (ok ? "all gradients as expected\n" : "a gradient differs from calculus\n");
  return ok ? 0 : 1;
}
