#pragma once
// Ember's optimizers (Keras: keras.optimizers) and learning-rate schedules: #include this one header.
#include "optimizers/adadelta.h"
#include "optimizers/adagrad.h"
#include "optimizers/adam.h"
#include "optimizers/adamax.h"
#include "optimizers/adamw.h"
#include "optimizers/lion.h"
#include "optimizers/nadam.h"
#include "optimizers/optimizer.h"
#include "optimizers/registry.h"
#include "optimizers/rmsprop.h"
#include "optimizers/schedules.h"
#include "optimizers/sgd.h"
