// custom_gradient (TF: tf.custom_gradient): an op with a gradient of your own, for numerical stability
// or to change what flows backward.
#include <cmath>
#include <iostream>

#include "framework/ember.h"
using namespace ember;

// log(1 + e^x). Differentiated op by op, its gradient is e^x / (1 + e^x): inf / inf = NaN once e^x
// overflows float32 (x > 88). Written by hand as 1 - 1 / (1 + e^x), it tends to 1 as it should.
Tensor log1pexp(const Tensor& x) {
  return custom_gradient(
      x, [](const Tensor& x) { return ops::log(1.0 + ops::exp(x)); },
      // backward maps the gradient of the output (dy) to the gradient of the input; it may use x.
      [x](const Tensor& dy) { return dy * (1.0 - 1.0 / (1.0 + ops::exp(x))); });
}

// The identity on the way forward; on the way back the gradient is clipped to [-1, 1] (a common trick
// to keep one exploding term from wrecking a training step).
Tensor clip_gradient(const Tensor& x) {
  return custom_gradient(
      x, [](const Tensor& x) { return x; },
      [](const Tensor& dy) { return ops::clip_by_value(dy, -1.0, 1.0); });
}

// d f(x) / dx at one point.
template <class F>
float derivative(F f, float at) {
  Tensor x = Tensor::scalar(at);
  GradientTape tape;
  tape.watch(x);
  Tensor y = f(x);
  return tape.gradient(y, x).item<float>();
}

int main() {
  auto naive = [](const Tensor& x) { return ops::log(1.0 + ops::exp(x)); };
  float naive_grad = derivative(naive, 100.0f);
  float stable_grad = derivative(log1pexp, 100.0f);
  std::cout << "naive log(1 + e^x)'  at x = 100: " << naive_grad << "\n"
            << "log1pexp'            at x = 100: " << stable_grad << "\n"
            << "log1pexp'            at x = 0:   " << derivative(log1pexp, 0.0f) << "\n";

  // 10 * x has the gradient 10; through clip_gradient only 1 comes back.
  float clipped = derivative([](const Tensor& x) { return clip_gradient(x) * 10.0; }, 2.0f);
  std::cout << "d(10 * clip_gradient(x))/dx: " << clipped << "\n";

  bool ok = std::isnan(naive_grad) && stable_grad == 1.0f && derivative(log1pexp, 0.0f) == 0.5f && clipped == 1.0f;
  std::cout << (ok ? "custom gradients as expected\n" : "unexpected gradient\n");
  return ok ? 0 : 1;
}
