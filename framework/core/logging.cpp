// The one `ember` logger. spdlog's headers stay in this file (built outside the unity batches with
// spdlog's definitions, see CMakeLists.txt), so the rest of the library compiles without them.
#include "framework/core/logging.h"

#include <cstdlib>
#include <iostream>
#include <memory>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

namespace ember::logging {

namespace {

spdlog::logger& logger() {
  static const std::shared_ptr<spdlog::logger> log = [] {
    std::shared_ptr<spdlog::logger> l = spdlog::get("ember");
    if (!l) {
      // Through std::cerr rather than file descriptor 2, so rdbuf redirection (tests, embedding programs) sees it.
      l = std::make_shared<spdlog::logger>("ember", std::make_shared<spdlog::sinks::ostream_sink_mt>(std::cerr, true));
      l->set_pattern("[ember] [%l] %v");
      spdlog::register_logger(l);
    }
    spdlog::level::level_enum level = spdlog::level::warn;
    if (const char* env = std::getenv("EMBER_LOG_LEVEL")) {
      // from_str answers "off" for a name it does not know; only a known name changes the level.
      const spdlog::level::level_enum parsed = spdlog::level::from_str(env);
      if (parsed != spdlog::level::off || std::string(env) == "off") level = parsed;
    }
    l->set_level(level);
    return l;
  }();
  return *log;
}

}  // namespace

void debug(const std::string& message) { logger().debug(message); }
void info(const std::string& message) { logger().info(message); }
void warn(const std::string& message) { logger().warn(message); }

}  // namespace ember::logging
