#pragma once
// Ember's input pipeline and dataset loaders: data::Dataset, datasets::fashion_mnist/mnist,
// datasets::cifar10, datasets::imdb, datasets::csv, data::image_dataset_from_directory, data::text_line_dataset.
#include "data/cifar10.h"
#include "data/csv.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "data/image_dataset.h"
#include "data/image_io.h"
#include "data/imdb.h"
#include "data/mnist.h"
#include "data/text_line_dataset.h"
