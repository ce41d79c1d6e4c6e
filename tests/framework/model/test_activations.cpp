// Activations by name with Keras 3's numbers: reference values computed by Keras 3.15 (TensorFlow 2.21
// backend) in float64:
//   x = np.array([-3.0, -1.5, -0.5, 0.0, 0.3, 1.0, 2.5]); keras.activations.get(name)(x)
// printed with "%.17g"; plus tape gradients against finite differences.
#include <algorithm>
#include <map>

#include "framework/model/activations.h"
#include "tests/support/grad_check.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::check_tensor;
using ember::testing::make;

namespace {

const std::vector<double> kX = {-3.0, -1.5, -0.5, 0.0, 0.3, 1.0, 2.5};

const std::map<std::string, std::vector<double>>& keras_reference() {
  static const std::map<std::string, std::vector<double>> ref = {
      {"relu", {0, 0, 0, 0, 0.29999999999999999, 1, 2.5}},
      {"sigmoid",
       {0.047425873177566788, 0.18242552380635632, 0.37754066879814546, 0.5, 0.57444251681165903, 0.7310585786300049,
        0.92414181997875644}},
      {"tanh",
       {-0.99505475368673046, -0.90514825364486629, -0.46211715726000979, 0, 0.2913126124515909, 0.76159415595576485,
        0.98661429815143031}},
      {"gelu",
       {-0.0040496947775210306, -0.10021080689063545, -0.1542687708693288, 0, 0.18537342606924007, 0.84134474192739028,
        2.484475834810659}},
      {"silu",
       {-0.14227761953270035, -0.27363828570953447, -0.18877033439907273, 0, 0.17233275504349771, 0.7310585786300049,
        2.3103545499468909}},
      {"swish",
       {-0.14227761953270035, -0.27363828570953447, -0.18877033439907273, 0, 0.17233275504349771, 0.7310585786300049,
        2.3103545499468909}},
      {"elu", {-0.95021293163213605, -0.77686983985157021, -0.39346934028736658, 0, 0.29999999999999999, 1, 2.5}},
      {"selu",
       {-1.670568728767112, -1.3658143533672529, -0.69175818780287135, 0, 0.31521029620664415, 1.0507009873554805,
        2.6267524683887009}},
      {"softplus",
       {0.048587351573742055, 0.20141327798275238, 0.47407698418010669, 0.69314718055994529, 0.85435524446852718,
        1.3132616875182228, 2.5788897342925496}},
      {"softsign",
       {-0.75, -0.59999999999999998, -0.33333333333333331, 0, 0.23076923076923075, 0.5, 0.7142857142857143}},
      {"relu6", {0, 0, 0, 0, 0.29999999999999999, 1, 2.5}},
      {"hard_sigmoid",
       {0, 0.25, 0.41666666666666669, 0.5, 0.54999999999999993, 0.66666666666666663, 0.91666666666666663}},
      {"exponential",
       {0.049787068367863944, 0.22313016014842982, 0.60653065971263342, 1, 1.3498588075760032, 2.7182818284590451,
        12.182493960703473}},
      {"leaky_relu",
       {-0.60000000894069672, -0.30000000447034836, -0.10000000149011612, 0, 0.29999999999999999, 1, 2.5}},
      {"hard_silu",
       {-0, -0.375, -0.20833333333333334, 0, 0.16499999999999998, 0.66666666666666663, 2.2916666666666665}},
      {"hard_swish",
       {-0, -0.375, -0.20833333333333334, 0, 0.16499999999999998, 0.66666666666666663, 2.2916666666666665}},
      {"mish",
       {-0.14564746127562458, -0.29809974216680679, -0.22074377465173001, 0, 0.20800137234811503, 0.86509838826731034,
        2.4713923045578809}},
      {"log_sigmoid",
       {-3.0485873515737421, -1.7014132779827524, -0.97407698418010669, -0.69314718055994529, -0.55435524446852713,
        -0.31326168751822286, -0.078889734292549626}},
      {"celu", {-0.95021293163213605, -0.77686983985157021, -0.39346934028736658, 0, 0.29999999999999999, 1, 2.5}},
      {"hard_tanh", {-1, -1, -0.5, 0, 0.29999999999999999, 1, 1}},
      {"squareplus",
       {0.30277563773199456, 0.5, 0.78077640640441515, 1, 1.1611874208078341, 1.6180339887498949, 2.8507810593582121}},
      {"tanh_shrink",
       {-2.0049452463132695, -0.59485174635513371, -0.037882842739990208, 0, 0.0086873875484090868, 0.23840584404423515,
        1.5133857018485697}},
      {"soft_shrink", {-2.5, -1, 0, 0, 0, 0.5, 2}},
      {"hard_shrink", {-3, -1.5, 0, 0, 0, 1, 2.5}},
      {"sparse_plus", {0, 0, 0.0625, 0.25, 0.42250000000000004, 1, 2.5}},
      {"sparse_sigmoid", {0, 0, 0.25, 0.5, 0.65000000000000002, 1, 1}},
      {"linear", {-3, -1.5, -0.5, 0, 0.29999999999999999, 1, 2.5}},
  };
  return ref;
}

}  // namespace

TEST_CASE("every named activation matches Keras 3 in float64", "[model][activations]") {
  const Tensor x = make(kX, {7}, DType::Float64);
  for (const auto& [name, expected] : keras_reference()) {
    INFO("activation " << name);
    // TF rounds leaky_relu's slope 0.2 to float32 (relative error 4.5e-8), and its float64 exact gelu
    // differs from 0.5 x (1 + erf(x / sqrt(2))) by 1.7e-7 relative at x = -3 (the mpmath value is Ember's).
    const double rel = name == "gelu" ? 1e-6 : 1e-7;
    check_tensor(activations::get(name)(x), DType::Float64, {7}, expected, rel, 1e-12);
  }
}

TEST_CASE("every listed name has a Keras reference and the reverse", "[model][activations]") {
  std::vector<std::string> listed = activations::names();
  for (const auto& [name, values] : keras_reference())
    CHECK(std::find(listed.begin(), listed.end(), name) != listed.end());
  for (const std::string& name : listed) {
    INFO("name " << name);
    CHECK((keras_reference().count(name) || name == "softmax" || name == "log_softmax"));
  }
  for (const char* required :
       {"relu", "sigmoid", "tanh", "softmax", "gelu", "silu", "swish", "elu", "selu", "softplus", "softsign", "linear",
        "relu6", "hard_sigmoid", "exponential", "leaky_relu", "log_softmax"})
    CHECK(std::find(listed.begin(), listed.end(), required) != listed.end());
}

TEST_CASE("activations with arguments match Keras 3", "[model][activations]") {
  const Tensor x = make(kX, {7}, DType::Float64);
  // keras.activations.gelu(x, approximate=True)
  check_tensor(activations::gelu(x, true), DType::Float64, {7},
               {-0.0036373923237909001, -0.10042842380005415, -0.15428599020775666, 0, 0.1853709235380408,
                0.84119199027867642, 2.4849157333319907},
               1e-7, 1e-12);
  // keras.activations.elu(x, alpha=0.5)
  check_tensor(activations::elu(x, 0.5), DType::Float64, {7},
               {-0.47510646581606802, -0.3884349199257851, -0.19673467014368329, 0, 0.29999999999999999, 1, 2.5}, 1e-7,
               1e-12);
  // keras.activations.leaky_relu(x, negative_slope=0.1) (slope rounded to float32 by TF)
  check_tensor(activations::leaky_relu(x, 0.1), DType::Float64, {7},
               {-0.30000000447034836, -0.15000000223517418, -0.05000000074505806, 0, 0.29999999999999999, 1, 2.5}, 1e-7,
               1e-12);
  // A slope above 1 is tf.nn.leaky_relu's select, not max(x, slope * x).
  check_tensor(activations::leaky_relu(make({-1, 2}, {2}, DType::Float64), 2.0), DType::Float64, {2}, {-2, 2});
}

TEST_CASE("softmax and log_softmax by name act on the last axis", "[model][activations]") {
  const Tensor m = make({1, 2, 3, -1, 0, 1000}, {2, 3}, DType::Float64);
  // keras.activations.softmax(m), softmax(m, axis=0), log_softmax(m) for m = [[1, 2, 3], [-1, 0, 1000]]
  check_tensor(activations::get("softmax")(m), DType::Float64, {2, 3},
               {0.090030573170380462, 0.24472847105479761, 0.6652409557748219, 0, 0, 1}, 1e-7, 1e-12);
  check_tensor(activations::softmax(m, 0), DType::Float64, {2, 3},
               {0.88079707797788231, 0.88079707797788231, 0, 0.11920292202211755, 0.11920292202211755, 1}, 1e-7, 1e-12);
  check_tensor(activations::get("log_softmax")(m), DType::Float64, {2, 3},
               {-2.4076059644443806, -1.4076059644443804, -0.40760596444438041, -1001, -1000, 0}, 1e-7, 1e-12);
}

TEST_CASE("linear and the empty name are the identity", "[model][activations]") {
  const Tensor x = make(kX, {7}, DType::Float32);
  CHECK(activations::get("")(x).is_same(x));
  CHECK(activations::get("linear")(x).is_same(x));
  CHECK(activations::linear(x).is_same(x));
}

TEST_CASE("activations keep float32 and agree with float64", "[model][activations]") {
  const Tensor x32 = make(kX, {7}, DType::Float32);
  const Tensor x64 = make(kX, {7}, DType::Float64);
  for (const std::string& name : activations::names()) {
    INFO("activation " << name);
    Tensor y = activations::get(name)(x32);
    REQUIRE(y.dtype() == DType::Float32);
    check_tensor(y, DType::Float32, {7}, testing::values_as_double(activations::get(name)(x64)), 1e-5, 1e-6);
  }
}

TEST_CASE("unknown activation names are InvalidArgument listing the known ones", "[model][activations]") {
  REQUIRE_THROWS_AS(activations::get("relu7"), InvalidArgument);
  REQUIRE_THROWS_WITH(activations::get("relu7"), Catch::Contains("relu7") && Catch::Contains("relu6") &&
                                                     Catch::Contains("softmax") && Catch::Contains("swish"));
  // Keras names are case-sensitive.
  REQUIRE_THROWS_AS(activations::get("ReLU"), InvalidArgument);
}

TEST_CASE("activation gradients match finite differences", "[model][activations][grad]") {
  // Points away from every kink (0, +-0.5, +-1, -3, 3 and 6).
  const Tensor x = make({-3.7, -2.2, -1.2, -0.7, -0.2, 0.4, 0.8, 1.3, 2.9, 6.5}, {10}, DType::Float64);
  for (const std::string& name : activations::names()) {
    activations::Activation f = activations::get(name);
    testing::check_gradients(name, [f](const std::vector<Tensor>& in) { return f(in[0]); }, {x},
                             {.h = 1e-6, .rtol = 1e-5, .atol = 1e-7});
  }
  const Tensor m = make({0.1, -0.4, 0.9, 1.3, 0.2, -2.0}, {2, 3}, DType::Float64);
  testing::check_gradients("softmax axis 0",
                           [](const std::vector<Tensor>& in) { return activations::softmax(in[0], 0); }, {m});
  testing::check_gradients("elu alpha 0.5", [](const std::vector<Tensor>& in) { return activations::elu(in[0], 0.5); },
                           {x});
  testing::check_gradients("leaky_relu 0.3",
                           [](const std::vector<Tensor>& in) { return activations::leaky_relu(in[0], 0.3); }, {x});
  testing::check_gradients("gelu approximate",
                           [](const std::vector<Tensor>& in) { return activations::gelu(in[0], true); }, {x});
}
