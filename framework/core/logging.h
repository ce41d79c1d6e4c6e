#pragma once
// Internal: the `ember` logger (spdlog, kept out of every other file), its level from EMBER_LOG_LEVEL
// (trace, debug, info, warn, error, critical or off; warn when unset or unknown). Lines go to std::cerr as
// "[ember] [warning] message", so a program can redirect them as it redirects its own stderr output.
#include <string>

namespace ember::logging {

void debug(const std::string& message);
void info(const std::string& message);
void warn(const std::string& message);

}  // namespace ember::logging
