// The ONNX graph under construction: names, nodes, initializers, transposes, pruning.
#include "framework/export/onnx_builder.h"

#include <cstring>
#include <set>

#include "framework/core/error.h"
#include "framework/model/layer.h"
#include "framework/ops/elementwise.h"

namespace ember::onnx::detail {

std::string GraphBuilder::fresh(const std::string& stem) {
  std::string name = stem;
  int& n = counters_[stem];
  while (taken_.count(name)) name = stem + "_" + std::to_string(++n);
  taken_.insert(name);
  return name;
}

std::string GraphBuilder::add(const std::string& op_type, const std::vector<std::string>& inputs,
                              const std::string& stem, ::onnx::NodeProto** node) {
  ::onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(op_type);
  const std::string out = fresh(stem);
  n->set_name(out);
  for (const std::string& in : inputs) n->add_input(in);
  n->add_output(out);
  if (node) *node = n;
  return out;
}

std::string GraphBuilder::floats(const std::vector<float>& values, const std::vector<int64_t>& dims,
                                 const std::string& stem) {
  ::onnx::TensorProto* t = graph_->add_initializer();
  const std::string name = fresh(stem);
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  // raw_data is little-endian, as every machine Ember runs on.
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return name;
}

std::string GraphBuilder::weight(const Tensor& value, const std::string& stem) {
  Tensor v = value.to(Device::cpu());
  if (v.dtype() != DType::Float32) v = ops::cast(v, DType::Float32);
  return floats(v.to_vector<float>(), v.shape().dims(), stem);
}

std::string GraphBuilder::int64s(const std::vector<int64_t>& values, const std::string& stem) {
  ::onnx::TensorProto* t = graph_->add_initializer();
  const std::string name = fresh(stem);
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t)));
  return name;
}

std::string GraphBuilder::transpose(const std::string& x, const std::vector<int64_t>& perm, const std::string& stem) {
  auto [it, inserted] = transposes_.try_emplace({x, perm});
  if (!inserted) return it->second;
  ::onnx::NodeProto* node = nullptr;
  const std::string out = add("Transpose", {x}, stem, &node);
  set_attr(node, "perm", perm);
  it->second = out;
  // Transposing back gives x itself: a following layer that wants the other layout reuses it.
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  transposes_.try_emplace({out, inverse}, x);
  return out;
}

void GraphBuilder::prune(const std::vector<std::string>& graph_outputs) {
  std::set<std::string> needed(graph_outputs.begin(), graph_outputs.end());
  std::vector<bool> keep(static_cast<size_t>(graph_->node_size()), false);
  for (int i = graph_->node_size() - 1; i >= 0; --i) {
    const ::onnx::NodeProto& n = graph_->node(i);
    bool used = false;
    for (const std::string& out : n.output()) used = used || needed.count(out) > 0;
    if (!used) continue;
    keep[static_cast<size_t>(i)] = true;
    for (const std::string& in : n.input()) needed.insert(in);
  }
  google::protobuf::RepeatedPtrField<::onnx::NodeProto> kept;
  for (int i = 0; i < graph_->node_size(); ++i)
    if (keep[static_cast<size_t>(i)]) *kept.Add() = graph_->node(i);
  graph_->mutable_node()->Swap(&kept);
  google::protobuf::RepeatedPtrField<::onnx::TensorProto> inits;
  for (const ::onnx::TensorProto& t : graph_->initializer())
    if (needed.count(t.name())) *inits.Add() = t;
  graph_->mutable_initializer()->Swap(&inits);
}

void set_attr(::onnx::NodeProto* node, const std::string& name, int64_t v) {
  ::onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_attr(::onnx::NodeProto* node, const std::string& name, float v) {
  ::onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void set_attr(::onnx::NodeProto* node, const std::string& name, const std::string& v) {
  ::onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}

void set_attr(::onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& v) {
  ::onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

Tensor layer_weight(const Layer& layer, const std::string& name) {
  for (const Variable& v : layer.weights()) {
    const std::string& full = v.name();
    if (full.size() > name.size() && full.compare(full.size() - name.size(), name.size(), name) == 0 &&
        full[full.size() - name.size() - 1] == '/')
      return v.value();
  }
  return {};
}

}  // namespace ember::onnx::detail
