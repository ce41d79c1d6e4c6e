#pragma once
// Ember's input pipeline and dataset loaders: data::Dataset, datasets::fashion_mnist/mnist, datasets::csv.
#include "data/csv.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "data/mnist.h"
