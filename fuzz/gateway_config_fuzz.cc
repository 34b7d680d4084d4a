// The gateway's config file (gateway/config/config.h): any YAML either parses or throws
// ConfigError with a message (the start-up error policy); no other exception, crash or
// hang. ParseGatewayConfig reads no files (policy files are LoadGatewayConfig's).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "gateway/config/config.h"

using kinference::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto config = kinference::gateway::ParseGatewayConfig(text);
    (void)kinference::gateway::EffectiveDrainTimeoutS(config, std::nullopt);
  } catch (const kinference::gateway::ConfigError& e) {
    Check(e.what()[0] != '\0');
  } catch (...) {
    Check(false);
  }
  return 0;
}
