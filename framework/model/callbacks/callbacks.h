#pragma once
// Ember's callbacks (Keras: keras.callbacks): the Callback base, History and CallbackList, the progress
// bar, and every built-in callback.
#include "framework/core/python_format.h"
#include "framework/model/callbacks/backup_and_restore.h"
#include "framework/model/callbacks/callback.h"
#include "framework/model/callbacks/csv_logger.h"
#include "framework/model/callbacks/early_stopping.h"
#include "framework/model/callbacks/lambda_callback.h"
#include "framework/model/callbacks/learning_rate_scheduler.h"
#include "framework/model/callbacks/model_checkpoint.h"
#include "framework/model/callbacks/monitor_callback.h"
#include "framework/model/callbacks/progbar.h"
#include "framework/model/callbacks/progbar_logger.h"
#include "framework/model/callbacks/reduce_lr_on_plateau.h"
#include "framework/model/callbacks/tensorboard.h"
#include "framework/model/callbacks/terminate_on_nan.h"

// Callbacks format numbers as Python does; the helpers live in framework/core, below the optimizers too.
namespace ember::callbacks {
using ::ember::PythonFormatArg;
using ::ember::python_float_repr;
using ::ember::python_str_format;
}  // namespace ember::callbacks
