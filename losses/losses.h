#pragma once
// Ember's losses (Keras: keras.losses): the Loss base, every loss class, and losses::get("mse").
#include "losses/binary_crossentropy.h"
#include "losses/categorical_crossentropy.h"
#include "losses/cosine_similarity.h"
#include "losses/hinge.h"
#include "losses/huber.h"
#include "losses/kl_divergence.h"
#include "losses/log_cosh.h"
#include "losses/loss.h"
#include "losses/mean_absolute_error.h"
#include "losses/mean_absolute_percentage_error.h"
#include "losses/mean_squared_error.h"
#include "losses/sparse_categorical_crossentropy.h"
