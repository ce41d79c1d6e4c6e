// Model::summary: tf-keras's print_summary table (layer_utils.py), column wrapping included.
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "framework/model/model.h"

namespace ember {

namespace {

// tf-keras print_row: each field is cut to its column, preferring to break after "),", "},", "]," or
// "',", and the rest continues on following lines.
void print_row(std::ostream& os, std::vector<std::string> fields, const std::vector<int>& positions) {
  auto any_left = [&] {
    for (const std::string& f : fields)
      if (!f.empty()) return true;
    return false;
  };
  while (any_left()) {
    std::string line;
    for (size_t col = 0; col < fields.size(); ++col) {
      const int start = col > 0 ? positions[col - 1] : 0;
      const int end = positions[col];
      const bool last = col == positions.size() - 1;
      const int space = last ? 0 : 2;
      int cutoff = end - start - space - (last ? 0 : 1);
      std::string fit = fields[col].substr(0, static_cast<size_t>(std::max(cutoff, 0)));
      size_t best = std::string::npos;
      for (const char* brk : {"),", "},", "],", "',"}) {
        size_t p = fit.find(brk);
        if (p != std::string::npos) best = std::min(best, p + 2);
      }
      if (best != std::string::npos) {
        cutoff = static_cast<int>(best);
        fit = fit.substr(0, best);
      }
      if (col == 0) line += " ";
      line += fit;
      line += std::string(static_cast<size_t>(space), ' ');
      fields[col] = fields[col].size() > static_cast<size_t>(std::max(cutoff, 0))
                        ? fields[col].substr(static_cast<size_t>(cutoff))
                        : std::string();
      if (static_cast<int>(line.size()) < end) line += std::string(static_cast<size_t>(end) - line.size(), ' ');
    }
    os << line << "\n";
  }
}

// tf-keras readable_memory_size.
std::string readable_memory_size(double bytes) {
  const char* units[] = {"Byte", "KB", "MB", "GB", "TB", "PB"};
  for (const char* unit : units) {
    if (bytes / 1024 < 1) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.2f %s", bytes, unit);
      return buf;
    }
    bytes /= 1024;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f PB", bytes);
  return buf;
}

std::pair<int64_t, double> count_and_bytes(const std::vector<Variable>& vs) {
  int64_t n = 0;
  double bytes = 0;
  for (const Variable& v : vs) {
    n += v.shape().num_elements();
    bytes += static_cast<double>(v.shape().num_elements() * static_cast<int64_t>(dtype_size(v.dtype())));
  }
  return {n, bytes};
}

}  // namespace

void Model::summary(std::ostream& os, int line_length) const {
  const auto& graph_nodes = nodes();
  // Which nodes each layer has in this graph, in execution order (their index is Keras's node index).
  std::map<const Layer*, std::vector<const detail::Node*>> layer_nodes;
  for (const auto& n : graph_nodes) layer_nodes[n->layer.get()].push_back(n.get());

  bool sequential_like = !is_graph_model() || sequential_;
  if (!sequential_like) {
    sequential_like = inputs_.size() == 1 && outputs_.size() == 1;
    for (const auto& [layer, ns] : layer_nodes) sequential_like = sequential_like && ns.size() == 1;
    for (const auto& n : graph_nodes) sequential_like = sequential_like && n->inputs.size() <= 1;
  }
  std::vector<int> positions;
  std::vector<std::string> header{"Layer (type)", "Output Shape", "Param #"};
  if (sequential_like) {
    if (line_length <= 0) line_length = 65;
    for (double p : {0.45, 0.85, 1.0}) positions.push_back(static_cast<int>(line_length * p));
  } else {
    if (line_length <= 0) line_length = 98;
    for (double p : {0.3, 0.6, 0.70, 1.0}) positions.push_back(static_cast<int>(line_length * p));
    header.push_back("Connected to");
  }

  os << "Model: \"" << name() << "\"\n" << std::string(static_cast<size_t>(line_length), '_') << "\n";
  print_row(os, header, positions);
  os << std::string(static_cast<size_t>(line_length), '=') << "\n";

  const std::vector<LayerPtr> ls = layers();
  for (size_t i = 0; i < ls.size(); ++i) {
    const Layer& l = *ls[i];
    const auto& ns = layer_nodes[&l];
    std::string shape = "multiple";
    // A node's output shape, or Keras's list of them for a layer with several outputs.
    auto node_shape = [](const detail::Node* n) {
      if (n->more_output_shapes.empty()) return n->output_shape.to_keras_string();
      std::string s = "[";
      for (size_t k = 0; k < n->more_output_shapes.size(); ++k)
        s += (k ? ", " : "") + n->more_output_shapes[k].to_keras_string();
      return s + "]";
    };
    if (!ns.empty()) {
      shape = node_shape(ns[0]);
      for (const auto* n : ns)
        if (node_shape(n) != shape) shape = "multiple";
      if (dynamic_cast<const layers::InputLayer*>(&l) && shape != "multiple") shape = "[" + shape + "]";
    }
    std::string params = l.built() ? std::to_string(l.count_params()) : "0 (unused)";
    std::vector<std::string> fields{l.name() + " (" + l.class_name() + ")", shape, params};
    if (!sequential_like) {
      std::string conn = "[";
      bool first = true;
      for (const auto* n : ns)
        for (const Tensor& in : n->inputs) {
          const detail::Node* src = in.keras_history()->node.get();
          const auto& src_nodes = layer_nodes[src->layer.get()];
          size_t idx = std::find(src_nodes.begin(), src_nodes.end(), src) - src_nodes.begin();
          conn += (first ? "'" : ", '") + src->layer->name() + "[" + std::to_string(idx) + "][" +
                  std::to_string(in.keras_history()->tensor_index) + "]'";
          first = false;
        }
      fields.push_back(conn + "]");
    }
    print_row(os, fields, positions);
    os << std::string(static_cast<size_t>(line_length), ' ') << "\n";
  }
  os << std::string(static_cast<size_t>(line_length), '=') << "\n";
  auto [trainable, trainable_bytes] = count_and_bytes(trainable_weights());
  auto [frozen, frozen_bytes] = count_and_bytes(non_trainable_weights());
  os << "Total params: " << trainable + frozen << " (" << readable_memory_size(trainable_bytes + frozen_bytes) << ")\n"
     << "Trainable params: " << trainable << " (" << readable_memory_size(trainable_bytes) << ")\n"
     << "Non-trainable params: " << frozen << " (" << readable_memory_size(frozen_bytes) << ")\n"
     << std::string(static_cast<size_t>(line_length), '_') << "\n";
}

void Model::summary() const { summary(std::cout); }

std::string Model::summary_string(int line_length) const {
  std::ostringstream os;
  summary(os, line_length);
  return os.str();
}

}  // namespace ember
