/* Inference from C with Ember's C API (include/ember_c.h): loads a saved Keras model, prints its inputs and
 * outputs, runs a batch of two samples (every input value 0.5) and prints the predictions.
 *
 *   predict MODEL.keras|MODEL.h5
 *
 * Exits non-zero when a call fails (printing ember_last_error()) or a prediction is not a finite number. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ember_c.h"

#define BATCH 2

static int check(EmberStatus status, const char* what) {
  if (status == EMBER_OK) return 1;
  fprintf(stderr, "%s failed: %s: %s\n", what, ember_status_name(status), ember_last_error());
  return 0;
}

static void print_shape(const int64_t* dims, size_t rank) {
  size_t d;
  printf("(");
  for (d = 0; d < rank; ++d) {
    if (dims[d] < 0) printf("None");
    else printf("%lld", (long long)dims[d]);
    printf(d + 1 < rank ? ", " : (rank == 1 ? ",)" : ")"));
  }
  if (rank == 0) printf(")");
}

int main(int argc, char** argv) {
  EmberModel* model = NULL;
  size_t num_inputs = 0, num_outputs = 0, i, k;
  float** inputs = NULL;
  float** outputs = NULL;
  size_t* input_sizes = NULL;
  size_t* output_sizes = NULL;
  int ok = 0;

  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.keras|MODEL.h5\n", argv[0]);
    return 2;
  }
  printf("Ember %s\n", ember_version());
  if (!check(ember_model_load(argv[1], &model), "ember_model_load")) return 1;
  if (!check(ember_model_num_inputs(model, &num_inputs), "ember_model_num_inputs") ||
      !check(ember_model_num_outputs(model, &num_outputs), "ember_model_num_outputs"))
    goto done;

  inputs = calloc(num_inputs, sizeof *inputs);
  input_sizes = calloc(num_inputs, sizeof *input_sizes);
  outputs = calloc(num_outputs, sizeof *outputs);
  output_sizes = calloc(num_outputs, sizeof *output_sizes);
  if (!inputs || !input_sizes || !outputs || !output_sizes) goto done;

  for (i = 0; i < num_inputs; ++i) {
    const char* name;
    const int64_t* dims;
    size_t rank;
    if (!check(ember_model_input_name(model, i, &name), "ember_model_input_name") ||
        !check(ember_model_input_shape(model, i, &dims, &rank), "ember_model_input_shape") ||
        !check(ember_model_input_size(model, i, BATCH, &input_sizes[i]), "ember_model_input_size"))
      goto done;
    printf("input %zu: %s ", i, name);
    print_shape(dims, rank);
    printf("\n");
    inputs[i] = malloc(input_sizes[i] * sizeof(float));
    if (!inputs[i]) goto done;
    for (k = 0; k < input_sizes[i]; ++k) inputs[i][k] = 0.5f;
  }
  for (i = 0; i < num_outputs; ++i) {
    const char* name;
    const int64_t* dims;
    size_t rank;
    if (!check(ember_model_output_name(model, i, &name), "ember_model_output_name") ||
        !check(ember_model_output_shape(model, i, &dims, &rank), "ember_model_output_shape") ||
        !check(ember_model_output_size(model, i, BATCH, &output_sizes[i]), "ember_model_output_size"))
      goto done;
    printf("output %zu: %s ", i, name);
    print_shape(dims, rank);
    printf("\n");
    outputs[i] = malloc(output_sizes[i] * sizeof(float));
    if (!outputs[i]) goto done;
  }

  if (!check(ember_model_predict(model, BATCH, (const float* const*)inputs, input_sizes, outputs, output_sizes),
             "ember_model_predict"))
    goto done;
  ok = 1;
  for (i = 0; i < num_outputs; ++i) {
    printf("output %zu:", i);
    for (k = 0; k < output_sizes[i]; ++k) {
      printf(" %g", outputs[i][k]);
      if (!isfinite(outputs[i][k])) ok = 0;
    }
    printf("\n");
  }

done:
  for (i = 0; inputs && i < num_inputs; ++i) free(inputs[i]);
  for (i = 0; outputs && i < num_outputs; ++i) free(outputs[i]);
  free(inputs);
  free(outputs);
  free(input_sizes);
  free(output_sizes);
  ember_model_free(model);
  return ok ? 0 : 1;
}
