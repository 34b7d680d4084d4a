// Test helper for gateway config tests: the ConfigError message ParseGatewayConfig gives
// for `yaml`, or "" when it parses.
//
// Thread-safety: pure function.
#pragma once

#include <string>

#include "gateway/config/config.h"

namespace kinference::gateway::testing {

inline std::string ConfigErrorOf(const std::string& yaml) {
  try {
    ParseGatewayConfig(yaml);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace kinference::gateway::testing
