// ember_predict: runs a saved Keras model on input files.
//   ember_predict MODEL INPUT... [-o OUT.npy|OUT.csv] [--batch-size N] [--device cpu|gpu] [--top-k K]
//                 [--labels FILE] [--config model.json] [--scale X]
// MODEL is a .keras or full-model .h5 file, or weights (.weights.h5) with their architecture in --config.
// Predictions print as CSV lines (one a sample) unless -o writes them to a .npy or .csv file.
#include <iostream>

#include "apps/predict.h"

int main(int argc, char** argv) { return ember::predict_app::ember_predict_main(argc, argv, std::cout, std::cerr); }
