/* Ember's C API: load a saved Keras model and run inference on it from C or any language with a C FFI.
 *
 * Pure C (C99): opaque handles, plain integers and float buffers; no C++ type crosses it, and no C++
 * exception escapes it. Every function that can fail returns an EmberStatus; on failure,
 * ember_last_error() gives the message (per thread, until that thread's next failing call).
 *
 *   EmberModel* model = NULL;
 *   if (ember_model_load("model.keras", &model) != EMBER_OK) { puts(ember_last_error()); return 1; }
 *   size_t in_size, out_size;
 *   ember_model_input_size(model, 0, batch, &in_size);    // floats the batch's input 0 holds
 *   ember_model_output_size(model, 0, batch, &out_size);
 *   ... fill input[in_size] ...
 *   const float* inputs[] = {input};  float* outputs[] = {output};
 *   ember_model_predict(model, batch, inputs, &in_size, outputs, &out_size);
 *   ember_model_free(model);
 *
 * Buffers are row-major (C order), batch first, float32 whatever the model's own dtypes (values are
 * converted). A model handle may be used by one thread at a time; different handles are independent.
 */
#ifndef EMBER_C_H_
#define EMBER_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a call returned: EMBER_OK, or the kind of error (Ember's error classes). */
typedef enum EmberStatus {
  EMBER_OK = 0,
  EMBER_INVALID_ARGUMENT = 1,    /* a bad argument: wrong buffer size, index, null pointer, shape */
  EMBER_NOT_FOUND = 2,           /* a missing file */
  EMBER_FAILED_PRECONDITION = 3, /* a call that makes no sense in this state */
  EMBER_OUT_OF_RANGE = 4,
  EMBER_RESOURCE_EXHAUSTED = 5,  /* memory or disk ran out */
  EMBER_UNIMPLEMENTED = 6,       /* something Ember does not support (a layer class, a file format version) */
  EMBER_DATA_LOSS = 7,           /* a corrupt or truncated file */
  EMBER_INTERNAL = 8,
  EMBER_UNKNOWN = 9              /* any other failure */
} EmberStatus;

/* Element types of model inputs and outputs (TF's names: float32, float64, ...). */
typedef enum EmberDType {
  EMBER_FLOAT32 = 0,
  EMBER_FLOAT64 = 1,
  EMBER_FLOAT16 = 2,
  EMBER_BFLOAT16 = 3,
  EMBER_INT32 = 4,
  EMBER_INT64 = 5,
  EMBER_UINT8 = 6,
  EMBER_BOOL = 7
} EmberDType;

/* A loaded model (opaque). */
typedef struct EmberModel EmberModel;

/* Ember's version, "major.minor.patch". */
const char* ember_version(void);
/* The message of this thread's last failed call ("" when none failed). */
const char* ember_last_error(void);
/* The status's name: "EMBER_OK", "EMBER_NOT_FOUND", ... */
const char* ember_status_name(EmberStatus status);

/* Loads a model saved by Ember or Keras: a .keras archive or a legacy full-model .h5 file. */
EmberStatus ember_model_load(const char* path, EmberModel** model);
/* A model from its architecture (the JSON text of Keras's model.to_json(), in a file) and a weights file
 * (.weights.h5, or a legacy weights .h5). */
EmberStatus ember_model_load_weights(const char* config_json_path, const char* weights_path, EmberModel** model);
/* Frees the model; NULL is allowed. */
void ember_model_free(EmberModel* model);

/* The number of model inputs and outputs. */
EmberStatus ember_model_num_inputs(const EmberModel* model, size_t* count);
EmberStatus ember_model_num_outputs(const EmberModel* model, size_t* count);
/* Input/output i's name (its layer's name); the string lives as long as the model. */
EmberStatus ember_model_input_name(const EmberModel* model, size_t i, const char** name);
EmberStatus ember_model_output_name(const EmberModel* model, size_t i, const char** name);
/* Input/output i's dtype in the model (buffers are float32 regardless). */
EmberStatus ember_model_input_dtype(const EmberModel* model, size_t i, EmberDType* dtype);
EmberStatus ember_model_output_dtype(const EmberModel* model, size_t i, EmberDType* dtype);
/* Input/output i's shape, batch axis first; -1 marks an unknown dimension (the batch). *dims lives as long
 * as the model. */
EmberStatus ember_model_input_shape(const EmberModel* model, size_t i, const int64_t** dims, size_t* rank);
EmberStatus ember_model_output_shape(const EmberModel* model, size_t i, const int64_t** dims, size_t* rank);
/* The number of floats input/output i holds for batch_size samples (InvalidArgument when a dimension other
 * than the batch is unknown). */
EmberStatus ember_model_input_size(const EmberModel* model, size_t i, int64_t batch_size, size_t* count);
EmberStatus ember_model_output_size(const EmberModel* model, size_t i, int64_t batch_size, size_t* count);

/* Runs the model (inference mode) on batch_size samples: inputs[i] points to input_sizes[i] floats for
 * input i, outputs[j] to output_sizes[j] floats of room for output j; each size must be exactly
 * ember_model_input_size / ember_model_output_size for this batch (InvalidArgument naming the input or
 * output, the size given and the size expected otherwise). The outputs are untouched when it fails. */
EmberStatus ember_model_predict(EmberModel* model, int64_t batch_size, const float* const* inputs,
                                const size_t* input_sizes, float* const* outputs, const size_t* output_sizes);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_C_H_ */
