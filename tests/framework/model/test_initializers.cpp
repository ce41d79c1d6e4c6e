// Initializers: Keras 3's distributions (checked by sample statistics), fans, orthogonality, seeds, names
// and configs (the expected configs are what Keras 3.15 prints for get_config(), less the input_axes /
// output_axes that only Keras >= 3.12 writes).
#include <algorithm>
#include <cmath>

#include "framework/model/initializers.h"
#include "tests/support/tensor_testing.h"

using namespace ember;
using ember::testing::values_as_double;
using json = nlohmann::json;
namespace init = ember::initializers;

namespace {

struct Stats {
  double mean = 0, std = 0, min = 0, max = 0;
};

Stats stats_of(const Tensor& t) {
  std::vector<double> v = values_as_double(t);
  Stats s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / static_cast<double>(v.size()));
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  return s;
}

// Uniform on [-limit, limit]: bounds respected and reached, std limit / sqrt(3), mean 0.
void check_uniform(const Tensor& t, double limit) {
  Stats s = stats_of(t);
  INFO("uniform limit " << limit << ": mean " << s.mean << " std " << s.std << " min " << s.min << " max " << s.max);
  // Draws are float32: the bound itself may round a little beyond the double-precision limit.
  CHECK(s.min >= -limit * (1 + 1e-6));
  CHECK(s.max <= limit * (1 + 1e-6));
  CHECK(s.min < -0.99 * limit);
  CHECK(s.max > 0.99 * limit);
  CHECK(std::abs(s.std - limit / std::sqrt(3.0)) < 0.02 * limit / std::sqrt(3.0));
  CHECK(std::abs(s.mean) < 0.02 * limit);
}

// Normal truncated at two of its stddev parameters (Keras's truncated_normal with stddev `param`).
void check_truncated(const Tensor& t, double mean, double param) {
  Stats s = stats_of(t);
  INFO("truncated normal stddev param " << param << ": mean " << s.mean << " std " << s.std << " min " << s.min
                                        << " max " << s.max);
  CHECK(s.min >= mean - 2 * param - 1e-6 * std::abs(mean - 2 * param));
  CHECK(s.max <= mean + 2 * param + 1e-6 * std::abs(mean + 2 * param));
  CHECK(s.max > mean + 1.9 * param);
  CHECK(std::abs(s.std - 0.87962566103423978 * param) < 0.02 * param);
  CHECK(std::abs(s.mean - mean) < 0.02 * param);
}

void check_normal(const Tensor& t, double mean, double stddev) {
  Stats s = stats_of(t);
  std::vector<double> v = values_as_double(t);
  const double beyond = static_cast<double>(std::count_if(v.begin(), v.end(),
                                                          [&](double x) { return std::abs(x - mean) > 2 * stddev; })) /
                        static_cast<double>(v.size());
  INFO("normal " << mean << ", " << stddev << ": mean " << s.mean << " std " << s.std << " beyond 2 std " << beyond);
  CHECK(std::abs(s.std - stddev) < 0.02 * stddev);
  CHECK(std::abs(s.mean - mean) < 0.02 * stddev);
  CHECK(std::abs(beyond - 0.0455) < 0.005);  // untruncated: 4.55% lie beyond two standard deviations
}

// max |W^T W - gain^2 I| for W viewed as (rows, cols) with rows >= cols, else W W^T.
double orthogonality_error(const Tensor& w, double gain) {
  const Shape& s = w.shape();
  int64_t cols = s[s.rank() - 1], rows = s.num_elements() / cols;
  std::vector<double> v = values_as_double(w);
  auto at = [&](int64_t r, int64_t c) { return v[static_cast<size_t>(r * cols + c)]; };
  const bool by_cols = rows >= cols;
  const int64_t n = by_cols ? cols : rows, len = by_cols ? rows : cols;
  double err = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t k = 0; k < len; ++k) dot += by_cols ? at(k, i) * at(k, j) : at(i, k) * at(j, k);
      err = std::max(err, std::abs(dot - (i == j ? gain * gain : 0.0)));
    }
  return err;
}

}  // namespace

TEST_CASE("compute_fans follows Keras", "[model][initializers]") {
  CHECK(init::compute_fans(Shape{}) == std::pair<double, double>{1, 1});
  CHECK(init::compute_fans(Shape{5}) == std::pair<double, double>{5, 5});
  CHECK(init::compute_fans(Shape{3, 4}) == std::pair<double, double>{3, 4});
  CHECK(init::compute_fans(Shape{3, 3, 16, 32}) == std::pair<double, double>{144, 288});
  CHECK(init::compute_fans(Shape{2, 3, 4, 5, 6}) == std::pair<double, double>{120, 144});
  CHECK(init::compute_fans(Shape{7, 2, 5}) == std::pair<double, double>{14, 35});
}

TEST_CASE("variance-scaling presets draw Keras's distributions", "[model][initializers]") {
  SECTION("GlorotUniform: limit sqrt(6 / (fan_in + fan_out))") {
    check_uniform(init::GlorotUniform({.seed = 1})({256, 256}), std::sqrt(6.0 / 512));
    check_uniform(Initializer("glorot_uniform")({128, 512}), std::sqrt(6.0 / 640));
  }
  SECTION("GlorotNormal: truncated, stddev sqrt(2 / (fan_in + fan_out)) after truncation") {
    check_truncated(init::GlorotNormal({.seed = 2})({256, 256}), 0, std::sqrt(2.0 / 512) / 0.87962566103423978);
  }
  SECTION("HeUniform / HeNormal on a conv kernel: fan_in = kh * kw * in") {
    check_uniform(init::HeUniform({.seed = 3})({3, 3, 64, 128}), std::sqrt(6.0 / 576));
    check_truncated(Initializer("he_normal")({3, 3, 64, 128}), 0, std::sqrt(2.0 / 576) / 0.87962566103423978);
  }
  SECTION("LecunUniform / LecunNormal: fan_in") {
    check_uniform(init::LecunUniform()({512, 128}), std::sqrt(3.0 / 512));
    check_truncated(init::LecunNormal({.seed = 4})({512, 128}), 0, std::sqrt(1.0 / 512) / 0.87962566103423978);
  }
  SECTION("VarianceScaling: every mode and distribution") {
    check_normal(
        init::VarianceScaling({.scale = 3, .mode = "fan_out", .distribution = "untruncated_normal"})({128, 256}), 0,
        std::sqrt(3.0 / 256));
    check_uniform(init::VarianceScaling({.scale = 0.5, .mode = "fan_avg", .distribution = "uniform"})({64, 1024}),
                  std::sqrt(3 * 0.5 / 544));
    check_truncated(init::VarianceScaling()({1024, 64}), 0, std::sqrt(1.0 / 1024) / 0.87962566103423978);
    // Conv kernel, fan_out = kh * kw * out.
    check_uniform(init::VarianceScaling({.scale = 2, .mode = "fan_out", .distribution = "uniform"})({3, 3, 32, 64}),
                  std::sqrt(6.0 / 576));
  }
}

TEST_CASE("RandomNormal, RandomUniform and TruncatedNormal use Keras's defaults", "[model][initializers]") {
  random::set_seed(5);  // unseeded initializers draw from the global generator: fixed draws, no rare misses
  check_normal(init::RandomNormal()({256, 256}), 0, 0.05);
  check_normal(init::RandomNormal({.mean = 1.0, .stddev = 2.0, .seed = 9})({256, 256}), 1.0, 2.0);
  check_uniform(Initializer("random_uniform")({256, 256}), 0.05);
  Stats u = stats_of(init::RandomUniform({.minval = 2, .maxval = 3})({256, 256}));
  CHECK(u.min >= 2);
  CHECK(u.max <= 3);
  CHECK(std::abs(u.mean - 2.5) < 0.01);
  check_truncated(Initializer("truncated_normal")({256, 256}), 0, 0.05);
  check_truncated(init::TruncatedNormal({.mean = -1, .stddev = 0.5})({256, 256}), -1, 0.5);
}

TEST_CASE("initializers produce the requested dtype", "[model][initializers]") {
  for (DType dt : testing::kFloatDTypes) {
    INFO("dtype " << dt);
    Tensor t = Initializer("glorot_uniform")({64, 64}, dt);
    CHECK(t.dtype() == dt);
    CHECK(t.shape() == Shape{64, 64});
    Stats s = stats_of(t);
    CHECK(s.max <= std::sqrt(6.0 / 128) * 1.01);
    CHECK(init::Orthogonal()({8, 8}, dt).dtype() == dt);
  }
  for (DType dt : testing::kAllDTypes) {
    INFO("dtype " << dt);
    testing::check_tensor(init::Zeros()({2, 3}, dt), dt, {2, 3}, std::vector<double>(6, 0.0));
    testing::check_tensor(init::Ones()({3}, dt), dt, {3}, {1, 1, 1});
    testing::check_tensor(init::Constant(3)({2}, dt), dt, {2},
                          dt == DType::Bool ? std::vector<double>{1, 1} : std::vector<double>{3, 3});
  }
  testing::check_tensor(init::Constant(0.25)({}), DType::Float32, {}, {0.25});
  REQUIRE_THROWS_AS(Initializer("he_normal")({4, 4}, DType::Int32), InvalidArgument);
  REQUIRE_THROWS_WITH(init::RandomUniform()({4}, DType::Int64),
                      Catch::Contains("RandomUniform") && Catch::Contains("int64"));
}

TEST_CASE("Orthogonal gives W^T W = gain^2 I", "[model][initializers]") {
  CHECK(orthogonality_error(init::Orthogonal({.seed = 1})({64, 32}), 1.0) < 1e-5);
  CHECK(orthogonality_error(init::Orthogonal()({32, 64}), 1.0) < 1e-5);  // rows < cols: orthogonal rows
  CHECK(orthogonality_error(init::Orthogonal()({48, 48}), 1.0) < 1e-5);
  CHECK(orthogonality_error(init::Orthogonal({.gain = 2.0})({3, 3, 8, 16}), 2.0) < 1e-4);
  CHECK(orthogonality_error(init::Orthogonal({.gain = 0.5})({40, 30}, DType::Float64), 0.5) < 1e-12);
  // A square orthogonal matrix is not a fixed one: two unseeded draws differ.
  CHECK(values_as_double(init::Orthogonal()({6, 6})) != values_as_double(init::Orthogonal()({6, 6})));
  REQUIRE_THROWS_WITH(init::Orthogonal()({5}), Catch::Contains("Orthogonal") && Catch::Contains("(5,)"));
}

TEST_CASE("a seeded initializer repeats its values; an unseeded one draws fresh ones", "[model][initializers]") {
  // Keras 3: an integer seed makes every call return the same values.
  for (const Initializer& seeded :
       {init::GlorotUniform({.seed = 5}), init::HeNormal({.seed = 5}), init::RandomNormal({.seed = 5}),
        init::RandomUniform({.seed = 5}), init::TruncatedNormal({.seed = 5}),
        init::VarianceScaling({.distribution = "untruncated_normal", .seed = 5}), init::Orthogonal({.seed = 5})}) {
    INFO(seeded.class_name());
    std::vector<double> a = values_as_double(seeded({16, 8}));
    CHECK(a == values_as_double(seeded({16, 8})));
    CHECK(a == values_as_double(Initializer::from_json(seeded.to_json())({16, 8})));
    random::set_seed(123);  // the global seed does not move a seeded initializer
    CHECK(a == values_as_double(seeded({16, 8})));
  }
  CHECK(values_as_double(init::GlorotUniform({.seed = 5})({16, 8})) !=
        values_as_double(init::GlorotUniform({.seed = 6})({16, 8})));
  for (const char* name : {"glorot_uniform", "he_normal", "random_normal", "orthogonal"}) {
    INFO(name);
    Initializer unseeded(name);
    CHECK(values_as_double(unseeded({16, 8})) != values_as_double(unseeded({16, 8})));
    // The global seed makes the sequence of unseeded draws reproducible.
    random::set_seed(77);
    std::vector<double> first = values_as_double(unseeded({16, 8}));
    random::set_seed(77);
    CHECK(first == values_as_double(unseeded({16, 8})));
  }
}

TEST_CASE("names and class names resolve to Keras's classes", "[model][initializers]") {
  const std::vector<std::pair<std::string, std::string>> names = {{"glorot_uniform", "GlorotUniform"},
                                                                  {"glorot_normal", "GlorotNormal"},
                                                                  {"he_uniform", "HeUniform"},
                                                                  {"he_normal", "HeNormal"},
                                                                  {"lecun_uniform", "LecunUniform"},
                                                                  {"lecun_normal", "LecunNormal"},
                                                                  {"random_normal", "RandomNormal"},
                                                                  {"random_uniform", "RandomUniform"},
                                                                  {"truncated_normal", "TruncatedNormal"},
                                                                  {"zeros", "Zeros"},
                                                                  {"ones", "Ones"},
                                                                  {"constant", "Constant"},
                                                                  {"orthogonal", "Orthogonal"},
                                                                  {"variance_scaling", "VarianceScaling"},
                                                                  {"normal", "RandomNormal"},
                                                                  {"uniform", "RandomUniform"},
                                                                  {"zero", "Zeros"},
                                                                  {"one", "Ones"},
                                                                  {"OrthogonalInitializer", "Orthogonal"}};
  for (const auto& [name, class_name] : names) {
    INFO(name);
    CHECK(Initializer(name).class_name() == class_name);
    CHECK(Initializer(class_name).class_name() == class_name);
    CHECK(Initializer::from_json(json(name)).class_name() == class_name);
  }
  REQUIRE_THROWS_AS(Initializer("glorot"), InvalidArgument);
  REQUIRE_THROWS_WITH(Initializer("glorot"), Catch::Contains("\"glorot\"") && Catch::Contains("glorot_uniform") &&
                                                 Catch::Contains("HeNormal") && Catch::Contains("orthogonal"));
  REQUIRE_THROWS_AS(Initializer(""), InvalidArgument);
}

TEST_CASE("configs are Keras 3's and round-trip through JSON", "[model][initializers]") {
  CHECK(Initializer("glorot_uniform").get_config() == json{{"seed", nullptr}});
  CHECK(init::HeNormal({.seed = 3}).get_config() == json{{"seed", 3}});
  CHECK(Initializer("random_normal").get_config() == json{{"seed", nullptr}, {"mean", 0.0}, {"stddev", 0.05}});
  CHECK(Initializer("random_uniform").get_config() == json{{"seed", nullptr}, {"minval", -0.05}, {"maxval", 0.05}});
  CHECK(Initializer("truncated_normal").get_config() == json{{"seed", nullptr}, {"mean", 0.0}, {"stddev", 0.05}});
  CHECK(init::Constant(2.0).get_config() == json{{"value", 2.0}});
  CHECK(Initializer("zeros").get_config() == json::object());
  CHECK(Initializer("ones").get_config() == json::object());
  CHECK(Initializer("orthogonal").get_config() == json{{"seed", nullptr}, {"gain", 1.0}});
  CHECK(Initializer("variance_scaling").get_config() ==
        json{{"seed", nullptr}, {"scale", 1.0}, {"mode", "fan_in"}, {"distribution", "truncated_normal"}});
  CHECK(init::Constant(2.0).to_json() == json{{"class_name", "Constant"}, {"config", {{"value", 2.0}}}});

  const std::vector<Initializer> all = {
      init::Zeros(),
      init::Ones(),
      init::Constant(-1.5),
      init::RandomNormal({.mean = 1, .stddev = 3, .seed = 4}),
      init::RandomUniform({.minval = -2, .maxval = 7}),
      init::TruncatedNormal({.stddev = 0.2}),
      init::VarianceScaling({.scale = 2, .mode = "fan_avg", .distribution = "uniform", .seed = 11}),
      init::GlorotUniform(),
      init::GlorotNormal({.seed = 1}),
      init::HeUniform(),
      init::HeNormal(),
      init::LecunUniform(),
      init::LecunNormal({.seed = 2}),
      init::Orthogonal({.gain = 1.5, .seed = 8})};
  for (const Initializer& i : all) {
    INFO(i.to_json().dump());
    Initializer back = Initializer::from_json(i.to_json());
    CHECK(back.class_name() == i.class_name());
    CHECK(back.get_config() == i.get_config());
    CHECK(back.to_json() == i.to_json());
  }
}

TEST_CASE("from_json reads Keras 3's serialized form", "[model][initializers]") {
  // keras.initializers.serialize(keras.initializers.GlorotUniform()) in Keras 3.15.
  Initializer g = Initializer::from_json(json::parse(R"({"module": "keras.initializers", "class_name":
      "GlorotUniform", "config": {"seed": null, "input_axes": null, "output_axes": null}, "registered_name": null})"));
  CHECK(g.class_name() == "GlorotUniform");
  CHECK(g.get_config() == json{{"seed", nullptr}});
  Initializer vs = Initializer::from_json(json::parse(R"({"module": "keras.initializers", "class_name":
      "VarianceScaling", "config": {"seed": 3, "scale": 2.0, "mode": "fan_out", "distribution": "normal",
      "input_axes": null, "output_axes": null}, "registered_name": null})"));
  // Keras maps distribution "normal" to "truncated_normal".
  CHECK(vs.get_config() ==
        json{{"seed", 3}, {"scale", 2.0}, {"mode", "fan_out"}, {"distribution", "truncated_normal"}});
  CHECK(Initializer::from_json(json{{"class_name", "Constant"}, {"config", {{"value", 4}}}}).get_config() ==
        json{{"value", 4.0}});
  CHECK(Initializer::from_json(json{{"class_name", "RandomNormal"}}).get_config() ==
        Initializer("random_normal").get_config());

  REQUIRE_THROWS_WITH(Initializer::from_json(json{{"class_name", "RandomNormal"}, {"config", {{"stdev", 1}}}}),
                      Catch::Contains("stdev"));
  REQUIRE_THROWS_AS(Initializer::from_json(json{{"class_name", "HeNormal"}, {"config", {{"seed", "x"}}}}),
                    InvalidArgument);
  REQUIRE_THROWS_AS(
      Initializer::from_json(json{{"class_name", "HeNormal"}, {"config", {{"input_axes", json::array({0})}}}}),
      InvalidArgument);
  REQUIRE_THROWS_AS(Initializer::from_json(json{{"config", json::object()}}), InvalidArgument);
  REQUIRE_THROWS_AS(Initializer::from_json(json(3)), InvalidArgument);
  REQUIRE_THROWS_WITH(Initializer::from_json(json{{"class_name", "Identity"}}), Catch::Contains("Identity"));
}

TEST_CASE("VarianceScaling validates its options as Keras does", "[model][initializers]") {
  REQUIRE_THROWS_WITH(init::VarianceScaling({.scale = 0}), Catch::Contains("scale"));
  REQUIRE_THROWS_WITH(init::VarianceScaling({.mode = "fan_sum"}), Catch::Contains("fan_sum"));
  REQUIRE_THROWS_WITH(init::VarianceScaling({.distribution = "cauchy"}), Catch::Contains("cauchy"));
  CHECK(init::VarianceScaling({.distribution = "Uniform"}).get_config()["distribution"] == "uniform");
}
