// Regression on a table read from a CSV file: standardize the features, train a small network with the
// mean squared error, report the mean absolute error on rows it has not seen.
//   regression_from_csv [file.csv]   numbers only, one header line, the last column is the target.
// Without a file it writes and uses a made-up table of house prices.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>

#include "framework/ember.h"
using namespace ember;

// 500 houses: area (m2), rooms, age (years), distance to the centre (km) and price (in 100,000s).
std::string write_sample_csv() {
  std::string path = (std::filesystem::temp_directory_path() / "ember_house_prices.csv").string();
  std::ofstream out(path);
  out << "area,rooms,age,distance,price\n";
  std::mt19937 gen(42);
  std::uniform_real_distribution<double> area(40, 200), age(0, 80), distance(0.5, 30);
  std::uniform_int_distribution<int> rooms(1, 6);
  std::normal_distribution<double> noise(0, 0.1);
  for (int i = 0; i < 500; ++i) {
    double a = area(gen), g = age(gen), d = distance(gen);
    int r = rooms(gen);
    double price = 1.0 + 0.02 * a + 0.1 * r - 0.01 * g - 0.05 * d + noise(gen);
    out << a << "," << r << "," << g << "," << d << "," << price << "\n";
  }
  return path;
}

int main(int argc, char** argv) {
  std::string path = argc > 1 ? argv[1] : write_sample_csv();
  Tensor table = datasets::csv::load(path, {.header = true});  // float32 [rows, columns]
  const int64_t rows = table.shape()[0], features = table.shape()[1] - 1, n_train = rows * 4 / 5;
  std::cout << path << ": " << rows << " rows, " << features << " features\n";

  // The first 80% of the rows train the model, the rest test it.
  Tensor x_train = ops::slice(table, {0, 0}, {n_train, features});
  Tensor y_train = ops::slice(table, {0, features}, {n_train, 1});
  Tensor x_test = ops::slice(table, {n_train, 0}, {rows - n_train, features});
  Tensor y_test = ops::slice(table, {n_train, features}, {rows - n_train, 1});

  // Features on different scales (m2 vs rooms) slow training down: give each mean 0 and deviation 1,
  // with the statistics of the training rows only.
  Tensor mean = ops::reduce_mean(x_train, {0}, /*keepdims=*/true);
  Tensor stddev = ops::reduce_std(x_train, {0}, /*keepdims=*/true);
  x_train = (x_train - mean) / stddev;
  x_test = (x_test - mean) / stddev;

  Sequential model({
      layers::Input({features}),
      layers::Dense(64, {.activation = "relu"}),
      layers::Dense(64, {.activation = "relu"}),
      layers::Dense(1),
  });
  model.compile({.optimizer = optimizers::Adam({.learning_rate = 1e-2}), .loss = "mse", .metrics = {"mae"}});
  model.fit(x_train, y_train, {.batch_size = 32, .epochs = 100, .verbose = 0, .validation_split = 0.2});

  double mae = model.evaluate(x_test, y_test, {.verbose = 0}).at("mae");
  std::cout << "mean absolute error on the test rows: " << mae << "\n";
  Tensor predicted = model.predict(x_test, {.verbose = 0});
  for (int64_t i = 0; i < 3; ++i)
    std::cout << "  row " << n_train + i << ": predicted " << predicted.to_vector<float>()[i] << ", actual "
              << y_test.to_vector<float>()[i] << "\n";
  if (argc > 1) return 0;  // nothing to check on someone else's data
  std::filesystem::remove(path);
  return mae < 0.2 ? 0 : 1;  // the made-up prices have noise of 0.1 (a mean absolute error of 0.08)
}
