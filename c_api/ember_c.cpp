// include/ember_c.h over Ember's C++ API: every entry point catches every exception and turns it into an
// EmberStatus and a per-thread message, so no C++ exception crosses into C.
#include "ember_c.h"

#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "framework/ember.h"
#include "framework/io/model_file.h"

struct EmberModel {
  std::shared_ptr<ember::Model> model;
  struct Port {
    std::string name;
    EmberDType dtype;
    std::vector<int64_t> dims;
  };
  std::vector<Port> inputs, outputs;
};

namespace {

thread_local std::string ember_c_last_error;

EmberStatus ember_c_fail(EmberStatus status, const char* message) {
  ember_c_last_error = message;
  return status;
}

// Runs f, turning each exception into its status and message.
template <class F>
EmberStatus ember_c_guarded(F&& f) {
  try {
    f();
    return EMBER_OK;
  } catch (const ember::InvalidArgument& e) {
    return ember_c_fail(EMBER_INVALID_ARGUMENT, e.what());
  } catch (const ember::NotFound& e) {
    return ember_c_fail(EMBER_NOT_FOUND, e.what());
  } catch (const ember::FailedPrecondition& e) {
    return ember_c_fail(EMBER_FAILED_PRECONDITION, e.what());
  } catch (const ember::OutOfRange& e) {
    return ember_c_fail(EMBER_OUT_OF_RANGE, e.what());
  } catch (const ember::ResourceExhausted& e) {
    return ember_c_fail(EMBER_RESOURCE_EXHAUSTED, e.what());
  } catch (const ember::Unimplemented& e) {
    return ember_c_fail(EMBER_UNIMPLEMENTED, e.what());
  } catch (const ember::DataLoss& e) {
    return ember_c_fail(EMBER_DATA_LOSS, e.what());
  } catch (const ember::Internal& e) {
    return ember_c_fail(EMBER_INTERNAL, e.what());
  } catch (const std::bad_alloc&) {
    return ember_c_fail(EMBER_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {  // other ember::Errors, JSON parse errors, ...
    return ember_c_fail(EMBER_UNKNOWN, e.what());
  } catch (...) {
    return ember_c_fail(EMBER_UNKNOWN, "unknown error");
  }
}

template <class T>
void ember_c_require(const T* p, const char* fn, const char* what) {
  EMBER_CHECK(p != nullptr, InvalidArgument) << fn << ": " << what << " is NULL";
}

EmberDType ember_c_dtype(ember::DType t) {
  switch (t) {
    case ember::DType::Float32: return EMBER_FLOAT32;
    case ember::DType::Float64: return EMBER_FLOAT64;
    case ember::DType::Float16: return EMBER_FLOAT16;
    case ember::DType::BFloat16: return EMBER_BFLOAT16;
    case ember::DType::Int32: return EMBER_INT32;
    case ember::DType::Int64: return EMBER_INT64;
    case ember::DType::UInt8: return EMBER_UINT8;
    case ember::DType::Bool: return EMBER_BOOL;
    case ember::DType::String:
      throw ember::InvalidArgument("the C API takes numeric and bool tensors only, not string tensors");
  }
  return EMBER_FLOAT32;
}

EmberModel::Port ember_c_port(const ember::Tensor& symbolic) {
  const auto& history = symbolic.keras_history();
  return {history && history->node ? history->node->layer->name() : std::string(), ember_c_dtype(symbolic.dtype()),
          symbolic.shape().dims()};
}

EmberModel* ember_c_wrap(std::shared_ptr<ember::Model> model) {
  EMBER_CHECK(model->is_graph_model(), InvalidArgument)
      << "model '" << model->name() << "' has no known inputs (a Sequential built without an input shape)";
  auto m = std::make_unique<EmberModel>();
  for (const ember::Tensor& t : model->inputs()) m->inputs.push_back(ember_c_port(t));
  for (const ember::Tensor& t : model->outputs()) m->outputs.push_back(ember_c_port(t));
  m->model = std::move(model);
  return m.release();
}

const EmberModel::Port& ember_c_port_at(const EmberModel* model, size_t i, bool input, const char* fn) {
  ember_c_require(model, fn, "model");
  const auto& ports = input ? model->inputs : model->outputs;
  EMBER_CHECK(i < ports.size(), InvalidArgument)
      << fn << ": " << (input ? "input " : "output ") << i << " does not exist; the model has " << ports.size() << " "
      << (input ? "input" : "output") << (ports.size() == 1 ? "" : "s");
  return ports[i];
}

// Floats a port holds for batch_size samples.
size_t ember_c_port_size(const EmberModel::Port& port, int64_t batch_size, bool input, const char* fn) {
  EMBER_CHECK(batch_size > 0, InvalidArgument) << fn << ": batch_size must be positive; got " << batch_size;
  size_t n = static_cast<size_t>(batch_size);
  for (size_t d = 1; d < port.dims.size(); ++d) {
    EMBER_CHECK(port.dims[d] >= 0, InvalidArgument)
        << fn << ": " << (input ? "input '" : "output '") << port.name << "' has shape "
        << ember::Shape(port.dims).to_keras_string() << ", with an unknown dimension besides the batch";
    n *= static_cast<size_t>(port.dims[d]);
  }
  return n;
}

ember::Shape ember_c_batch_shape(const EmberModel::Port& port, int64_t batch_size) {
  std::vector<int64_t> dims = port.dims;
  if (!dims.empty()) dims[0] = batch_size;
  return ember::Shape(dims);
}

}  // namespace

extern "C" {

const char* ember_version(void) { return EMBER_C_VERSION; }

const char* ember_last_error(void) { return ember_c_last_error.c_str(); }

const char* ember_status_name(EmberStatus status) {
  switch (status) {
    case EMBER_OK: return "EMBER_OK";
    case EMBER_INVALID_ARGUMENT: return "EMBER_INVALID_ARGUMENT";
    case EMBER_NOT_FOUND: return "EMBER_NOT_FOUND";
    case EMBER_FAILED_PRECONDITION: return "EMBER_FAILED_PRECONDITION";
    case EMBER_OUT_OF_RANGE: return "EMBER_OUT_OF_RANGE";
    case EMBER_RESOURCE_EXHAUSTED: return "EMBER_RESOURCE_EXHAUSTED";
    case EMBER_UNIMPLEMENTED: return "EMBER_UNIMPLEMENTED";
    case EMBER_DATA_LOSS: return "EMBER_DATA_LOSS";
    case EMBER_INTERNAL: return "EMBER_INTERNAL";
    case EMBER_UNKNOWN: return "EMBER_UNKNOWN";
  }
  return "EMBER_UNKNOWN";
}

EmberStatus ember_model_load(const char* path, EmberModel** model) {
  if (model) *model = nullptr;
  return ember_c_guarded([&] {
    ember_c_require(path, "ember_model_load", "path");
    ember_c_require(model, "ember_model_load", "model");
    *model = ember_c_wrap(ember::io::load_model_file(path, /*compile=*/false));
  });
}

EmberStatus ember_model_load_weights(const char* config_json_path, const char* weights_path, EmberModel** model) {
  if (model) *model = nullptr;
  return ember_c_guarded([&] {
    ember_c_require(config_json_path, "ember_model_load_weights", "config_json_path");
    ember_c_require(weights_path, "ember_model_load_weights", "weights_path");
    ember_c_require(model, "ember_model_load_weights", "model");
    std::ifstream in(config_json_path);
    EMBER_CHECK(in.good(), NotFound) << "ember_model_load_weights: cannot open " << config_json_path;
    std::ostringstream json;
    json << in.rdbuf();
    std::shared_ptr<ember::Model> m = ember::models::model_from_json(json.str());
    m->load_weights(weights_path);
    *model = ember_c_wrap(std::move(m));
  });
}

void ember_model_free(EmberModel* model) { delete model; }

EmberStatus ember_model_num_inputs(const EmberModel* model, size_t* count) {
  return ember_c_guarded([&] {
    ember_c_require(model, "ember_model_num_inputs", "model");
    ember_c_require(count, "ember_model_num_inputs", "count");
    *count = model->inputs.size();
  });
}

EmberStatus ember_model_num_outputs(const EmberModel* model, size_t* count) {
  return ember_c_guarded([&] {
    ember_c_require(model, "ember_model_num_outputs", "model");
    ember_c_require(count, "ember_model_num_outputs", "count");
    *count = model->outputs.size();
  });
}

EmberStatus ember_model_input_name(const EmberModel* model, size_t i, const char** name) {
  return ember_c_guarded([&] {
    ember_c_require(name, "ember_model_input_name", "name");
    *name = ember_c_port_at(model, i, true, "ember_model_input_name").name.c_str();
  });
}

EmberStatus ember_model_output_name(const EmberModel* model, size_t i, const char** name) {
  return ember_c_guarded([&] {
    ember_c_require(name, "ember_model_output_name", "name");
    *name = ember_c_port_at(model, i, false, "ember_model_output_name").name.c_str();
  });
}

EmberStatus ember_model_input_dtype(const EmberModel* model, size_t i, EmberDType* dtype) {
  return ember_c_guarded([&] {
    ember_c_require(dtype, "ember_model_input_dtype", "dtype");
    *dtype = ember_c_port_at(model, i, true, "ember_model_input_dtype").dtype;
  });
}

EmberStatus ember_model_output_dtype(const EmberModel* model, size_t i, EmberDType* dtype) {
  return ember_c_guarded([&] {
    ember_c_require(dtype, "ember_model_output_dtype", "dtype");
    *dtype = ember_c_port_at(model, i, false, "ember_model_output_dtype").dtype;
  });
}

EmberStatus ember_model_input_shape(const EmberModel* model, size_t i, const int64_t** dims, size_t* rank) {
  return ember_c_guarded([&] {
    ember_c_require(dims, "ember_model_input_shape", "dims");
    ember_c_require(rank, "ember_model_input_shape", "rank");
    const EmberModel::Port& port = ember_c_port_at(model, i, true, "ember_model_input_shape");
    *dims = port.dims.data();
    *rank = port.dims.size();
  });
}

EmberStatus ember_model_output_shape(const EmberModel* model, size_t i, const int64_t** dims, size_t* rank) {
  return ember_c_guarded([&] {
    ember_c_require(dims, "ember_model_output_shape", "dims");
    ember_c_require(rank, "ember_model_output_shape", "rank");
    const EmberModel::Port& port = ember_c_port_at(model, i, false, "ember_model_output_shape");
    *dims = port.dims.data();
    *rank = port.dims.size();
  });
}

EmberStatus ember_model_input_size(const EmberModel* model, size_t i, int64_t batch_size, size_t* count) {
  return ember_c_guarded([&] {
    ember_c_require(count, "ember_model_input_size", "count");
    *count = ember_c_port_size(ember_c_port_at(model, i, true, "ember_model_input_size"), batch_size, true,
                               "ember_model_input_size");
  });
}

EmberStatus ember_model_output_size(const EmberModel* model, size_t i, int64_t batch_size, size_t* count) {
  return ember_c_guarded([&] {
    ember_c_require(count, "ember_model_output_size", "count");
    *count = ember_c_port_size(ember_c_port_at(model, i, false, "ember_model_output_size"), batch_size, false,
                               "ember_model_output_size");
  });
}

EmberStatus ember_model_predict(EmberModel* model, int64_t batch_size, const float* const* inputs,
                                const size_t* input_sizes, float* const* outputs, const size_t* output_sizes) {
  return ember_c_guarded([&] {
    const char* fn = "ember_model_predict";
    ember_c_require(model, fn, "model");
    ember_c_require(inputs, fn, "inputs");
    ember_c_require(input_sizes, fn, "input_sizes");
    ember_c_require(outputs, fn, "outputs");
    ember_c_require(output_sizes, fn, "output_sizes");
    // Every buffer is checked before any is read, so a bad call does no work.
    for (size_t j = 0; j < model->outputs.size(); ++j) {
      const EmberModel::Port& port = model->outputs[j];
      const size_t want = ember_c_port_size(port, batch_size, false, fn);
      EMBER_CHECK(outputs[j] != nullptr, InvalidArgument) << fn << ": outputs[" << j << "] ('" << port.name << "') is NULL";
      EMBER_CHECK(output_sizes[j] == want, InvalidArgument)
          << fn << ": output " << j << " ('" << port.name << "', shape " << ember::Shape(port.dims).to_keras_string()
          << ") holds " << want << " floats for a batch of " << batch_size << "; given room for " << output_sizes[j];
    }
    std::vector<ember::Tensor> xs;
    for (size_t i = 0; i < model->inputs.size(); ++i) {
      const EmberModel::Port& port = model->inputs[i];
      const size_t want = ember_c_port_size(port, batch_size, true, fn);
      EMBER_CHECK(inputs[i] != nullptr, InvalidArgument) << fn << ": inputs[" << i << "] ('" << port.name << "') is NULL";
      EMBER_CHECK(input_sizes[i] == want, InvalidArgument)
          << fn << ": input " << i << " ('" << port.name << "', shape " << ember::Shape(port.dims).to_keras_string()
          << ") holds " << want << " floats for a batch of " << batch_size << "; given " << input_sizes[i];
      ember::Tensor x = ember::Tensor::empty(ember_c_batch_shape(port, batch_size), ember::DType::Float32, ember::Device::cpu());
      std::memcpy(x.raw_data(), inputs[i], want * sizeof(float));
      const ember::DType dtype = model->model->inputs()[i].dtype();
      x = x.to(ember::default_device());
      xs.push_back(dtype == ember::DType::Float32 ? x : ember::ops::cast(x, dtype));
    }
    const std::vector<ember::Tensor> ys = model->model->predict_outputs(xs, {.batch_size = batch_size, .verbose = 0});
    std::vector<ember::Tensor> host;
    for (size_t j = 0; j < ys.size(); ++j) {
      host.push_back(ember::ops::cast(ys[j], ember::DType::Float32).to(ember::Device::cpu()));
      EMBER_CHECK(static_cast<size_t>(host.back().num_elements()) == output_sizes[j], Internal)
          << fn << ": output " << j << " has shape " << host.back().shape() << ", not the model's "
          << ember::Shape(model->outputs[j].dims).to_keras_string();
    }
    for (size_t j = 0; j < host.size(); ++j) std::memcpy(outputs[j], host[j].raw_data(), output_sizes[j] * sizeof(float));
  });
}

}  // extern "C"
