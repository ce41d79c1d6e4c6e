#pragma once
// Keras's automatic object names ("dense", "dense_1", ...), shared by layers and optimizers (Keras counts
// both with one backend.get_uid per prefix).
#include <string>

namespace ember {

// Makes names unique the Keras way: the first "dense", then "dense_1", ... (per process; reset by
// backend::clear_session).
std::string unique_layer_name(const std::string& base);

// Forgets every name unique_layer_name gave (Keras: clear_session resets the uids).
void reset_unique_names();

}  // namespace ember
