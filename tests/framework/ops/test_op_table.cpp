// Walks op_list.def: every op has a CPU kernel, and every call goes through the one dispatch point.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "framework/ember.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/op.h"

using namespace ember;

TEST_CASE("every op in the table has a CPU kernel", "[ops][table]") {
  std::set<std::string> names;
  for (int i = 0; i < kNumOps; ++i) {
    OpId op = static_cast<OpId>(i);
    INFO("op " << op_name(op));
    CHECK(has_kernel(op, DeviceType::CPU));
    CHECK(names.insert(op_name(op)).second);
  }
  CHECK(static_cast<int>(names.size()) == kNumOps);
}

TEST_CASE("op_info reflects op_list.def", "[ops][table]") {
  CHECK(std::string(op_name(OpId::add)) == "add");
  CHECK(op_info(OpId::add).arity == 2);
  CHECK(op_info(OpId::argmax).differentiable == false);
  CHECK(op_info(OpId::conv2d).differentiable == true);
  CHECK(op_info(OpId::concat).arity == -1);
}

TEST_CASE("run_op checks the number of tensor inputs against the table's arity", "[ops][table]") {
  const Tensor a = Tensor::from_vector<float>({1, 2}, {2});
  const OutputSpec out{Shape({2}), DType::Float32};
  CHECK_THROWS_AS(run_op(OpId::add, std::vector<Tensor>{a}, out), Internal);
  CHECK_THROWS_WITH(run_op(OpId::exp, std::vector<Tensor>{a, a}, out),
                    Catch::Contains("exp: called with 2 tensor input(s); op_list.def gives it 1"));
  CHECK_THROWS_AS(run_op(OpId::fill, std::vector<Tensor>{a}, out), Internal);
  // Variadic ops take any number.
  CHECK(run_op(OpId::concat, std::vector<Tensor>{a, a, a}, OutputSpec{Shape({6}), DType::Float32}, AxisAttrs{0})
            .num_elements() == 6);
  CHECK(run_op(OpId::add, std::vector<Tensor>{a, a}, out).to_vector<float>() == std::vector<float>{2, 4});
}

TEST_CASE("supports answers per dtype", "[ops][table]") {
  CHECK(supports(OpId::add, DeviceType::CPU, DType::Float32));
  CHECK(supports(OpId::matmul, DeviceType::CPU, DType::BFloat16));
  CHECK_FALSE(supports(OpId::exp, DeviceType::CPU, DType::Int32));
  // A CUDA kernel exists exactly when the backend is built (test_cuda_backend checks every op).
  CHECK(supports(OpId::add, DeviceType::CUDA, DType::Float32) == config::is_built_with_cuda());
  CHECK_FALSE(supports(OpId::logical_and, DeviceType::CUDA, DType::Float32));
}

namespace {
int g_seen = 0;
OpId g_last = OpId::neg;
void count_hook(const OpRecord& r) {
  ++g_seen;
  g_last = r.op;
}
}  // namespace

TEST_CASE("hooks observe every executed op", "[ops][table]") {
  Tensor a = Tensor::from_vector<float>({1, 2}, {2});
  g_seen = 0;
  int id = add_op_hook(&count_hook);
  Tensor b = ops::add(a, a);
  Tensor c = ops::exp(b);
  remove_op_hook(id);
  CHECK(g_seen == 2);
  CHECK(g_last == OpId::exp);
  Tensor d = ops::add(a, a);
  CHECK(g_seen == 2);
}

TEST_CASE("an op on a missing device is a clear error", "[ops][table]") {
  if (!config::list_physical_devices("GPU").empty()) {
    WARN("skipped: a GPU is present");
    return;
  }
  REQUIRE_THROWS_AS(DeviceScope(Device::cuda(0)), InvalidArgument);
  REQUIRE_THROWS_WITH(Tensor::empty({2}, DType::Float32, Device::cuda(0)), Catch::Contains("cuda:0"));
}
