// String tensors (DType::String, TF's tf.string): creation, reading, printing, element lifetime across copies,
// views and slices, the shape ops that move strings, and the clear refusal of every other op.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/io/hdf5_file.h"
#include "tests/support/temp_dir.h"

using namespace ember;
using Catch::Contains;

namespace {

using Strings = std::vector<std::string>;

// Long enough that std::string keeps them on the heap (no small-string buffer): lifetime bugs reach ASan.
std::string heap_string(const std::string& s) { return s + std::string(40, '.') + s; }

}  // namespace

TEST_CASE("string tensors: dtype, creation and reading back", "[core][string]") {
  CHECK(dtype_from_name("string") == DType::String);
  CHECK(std::string(dtype_name(DType::String)) == "string");
  CHECK_FALSE(is_floating(DType::String));
  CHECK_FALSE(is_integer(DType::String));

  const Strings values = {"a", "", heap_string("b"), std::string("nul\0byte", 8)};
  Tensor t = Tensor::from_vector<std::string>(values, Shape{2, 2});
  CHECK(t.dtype() == DType::String);
  CHECK(t.shape() == Shape{2, 2});
  CHECK(t.device() == Device::cpu());
  CHECK(t.to_vector<std::string>() == values);
  CHECK(t.data<std::string>()[2] == values[2]);
  CHECK(Tensor::from_vector<std::string>(values).shape() == Shape{4});

  Tensor s = Tensor::scalar<std::string>("hello");
  CHECK(s.rank() == 0);
  CHECK(s.item<std::string>() == "hello");

  Tensor e = Tensor::empty(Shape{3}, DType::String);  // strings start empty
  CHECK(e.to_vector<std::string>() == Strings{"", "", ""});

  CHECK_THROWS_AS(t.to_vector<float>(), InvalidArgument);
  CHECK_THROWS_AS(Tensor::from_vector<std::string>({"a"}, Shape{2}), InvalidArgument);
}

TEST_CASE("string tensors print as TF prints tf.string", "[core][string]") {
  CHECK(Tensor::scalar<std::string>("abc").to_string() ==
        "ember.Tensor(b'abc', shape=(), dtype=string, device=cpu:0)");
  Tensor t = Tensor::from_vector<std::string>({"a", "it's", "tab\there\n", "\x01\xff", "q'\"", "back\\slash"},
                                              Shape{2, 3});
  CHECK(t.to_string() ==
        "ember.Tensor([[b'a' b\"it's\" b'tab\\there\\n'] [b'\\x01\\xff' b'q\\'\"' b'back\\\\slash']], shape=(2, 3), "
        "dtype=string, device=cpu:0)");
  CHECK(Tensor::empty(Shape{0}, DType::String).to_string() == "ember.Tensor([], shape=(0,), dtype=string, device=cpu:0)");
}

TEST_CASE("string tensors: copies, views and slices outlive their source", "[core][string]") {
  Tensor view, row, clone, copy;
  {
    Tensor source = Tensor::from_vector<std::string>(
        {heap_string("a"), heap_string("b"), heap_string("c"), heap_string("d"), heap_string("e"), heap_string("f")},
        Shape{3, 2});
    copy = source;
    view = source.view(Shape{6});
    row = source.slice_rows(1, 3);
    clone = source.clone();
  }
  CHECK(view.to_vector<std::string>()[5] == heap_string("f"));
  CHECK(row.to_vector<std::string>() == Strings{heap_string("c"), heap_string("d"), heap_string("e"), heap_string("f")});
  // Copies and views share the storage; the clone is a deep copy.
  copy.data<std::string>()[0] = "changed";
  CHECK(view.to_vector<std::string>()[0] == "changed");
  CHECK(clone.to_vector<std::string>()[0] == heap_string("a"));
}

TEST_CASE("string tensors: the shape ops move strings", "[core][string][ops]") {
  Tensor t = Tensor::from_vector<std::string>({heap_string("a"), "b", "c", "d", "e", heap_string("f")}, Shape{2, 3});
  CHECK(ops::reshape(t, Shape{3, 2}).to_vector<std::string>() == t.to_vector<std::string>());
  CHECK(ops::transpose(t).to_vector<std::string>() == Strings{heap_string("a"), "d", "b", "e", "c", heap_string("f")});
  CHECK(ops::slice(t, {0, 1}, {2, 2}).to_vector<std::string>() == Strings{"b", "c", "e", heap_string("f")});
  CHECK(ops::strided_slice(t, {0, 2}, {2, -4}, {1, -2}).to_vector<std::string>() ==
        Strings{"c", heap_string("a"), heap_string("f"), "d"});
  CHECK(ops::concat({t, t}, 0).shape() == Shape{4, 3});
  CHECK(ops::concat({t, ops::slice(t, {0, 0}, {2, 1})}, 1).to_vector<std::string>() ==
        Strings{heap_string("a"), "b", "c", heap_string("a"), "d", "e", heap_string("f"), "d"});
  Tensor stacked = ops::stack({Tensor::scalar<std::string>("x"), Tensor::scalar<std::string>("y")});
  CHECK(stacked.shape() == Shape{2});
  CHECK(stacked.to_vector<std::string>() == Strings{"x", "y"});
  CHECK(ops::gather(t, Tensor::from_vector<int32_t>({1, 0, 1})).to_vector<std::string>() ==
        Strings{"d", "e", heap_string("f"), heap_string("a"), "b", "c", "d", "e", heap_string("f")});
  CHECK(ops::gather(t, Tensor::from_vector<int64_t>({2}), {.axis = 1}).to_vector<std::string>() ==
        Strings{"c", heap_string("f")});
  CHECK(ops::tile(Tensor::from_vector<std::string>({"p", "q"}), {2}).to_vector<std::string>() ==
        Strings{"p", "q", "p", "q"});
  CHECK(ops::broadcast_to(Tensor::scalar<std::string>("z"), Shape{2}).to_vector<std::string>() == Strings{"z", "z"});
  CHECK(ops::split(t, 3, 1)[2].to_vector<std::string>() == Strings{"c", heap_string("f")});
}

TEST_CASE("string tensors: other ops refuse them by name", "[core][string][ops]") {
  Tensor t = Tensor::from_vector<std::string>({"1", "2"});
  CHECK_THROWS_AS(ops::add(t, t), InvalidArgument);
  CHECK_THROWS_WITH(ops::add(t, t), Contains("add") && Contains("string"));
  const Tensor row = ops::reshape(t, {1, 2}), column = ops::reshape(t, {2, 1});
  CHECK_THROWS_AS(ops::matmul(row, column), InvalidArgument);
  CHECK_THROWS_WITH(ops::matmul(row, column), Contains("matmul") && Contains("string"));
  CHECK_THROWS_AS(ops::cast(t, DType::Float32), InvalidArgument);
  CHECK_THROWS_WITH(ops::cast(t, DType::Float32), Contains("cast") && Contains("string"));
  CHECK_THROWS_AS(ops::reduce_sum(t), InvalidArgument);
  CHECK_THROWS_WITH(ops::reduce_sum(t), Contains("string"));
  CHECK_THROWS_AS(ops::zeros({2}, DType::String), InvalidArgument);
  CHECK_THROWS_WITH(ops::zeros({2}, DType::String), Contains("string"));
  CHECK_THROWS_AS(Tensor::scalar_of(1.0, DType::String), InvalidArgument);
  CHECK_THROWS_WITH(Tensor::scalar_of(1.0, DType::String), Contains("Tensor::scalar_of") && Contains("string"));
}

TEST_CASE("string tensors live on the CPU", "[core][string]") {
  Tensor t = Tensor::scalar<std::string>("x");
  CHECK(t.to(Device::cpu()).is_same(t));
  const Device gpu(DeviceType::CUDA, 0);
  CHECK_THROWS_AS(t.to(gpu), InvalidArgument);
  CHECK_THROWS_WITH(t.to(gpu), Contains("Tensor::to") && Contains("string tensors live on the CPU"));
  CHECK_THROWS_AS(Tensor::empty(Shape{1}, DType::String, gpu), InvalidArgument);
  CHECK_THROWS_WITH(Tensor::empty(Shape{1}, DType::String, gpu), Contains("string tensors live on the CPU"));
}

TEST_CASE("string tensors are not saved into checkpoints", "[core][string][io]") {
  ember::testing::TempDir dir("string_ckpt");
  io::H5File file = io::H5File::create(dir.file("weights.h5"));
  try {
    file.root().write_dataset("vocabulary", Tensor::from_vector<std::string>({"a", "b"}));
    FAIL("expected Unimplemented");
  } catch (const Unimplemented& e) {
    CHECK_THAT(e.what(), Contains("string tensor") && Contains("vocabulary"));
  }
}
