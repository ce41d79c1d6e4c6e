#include <iostream>

#include "framework/ember.h"
using namespace ember;

int main() {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = ops::matmul(a, a);  // [[7, 10], [15, 22]]
  float s = ops::reduce_sum(b).item<float>();
  std::cout << b << "\n";
  if (s != 54.0f) {
    std::cerr << "consumer: expected sum 54, got " << s << "\n";
    return 1;
  }
  std::cout << "consumer ok\n";
  return 0;
}
