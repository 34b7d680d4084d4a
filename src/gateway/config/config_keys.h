// Every key of the gateway config file (config.h), one row each with type, default and
// meaning (common/config_keys.h): the gateway's own sections and, after them, the
// `accounting` section's (accounting/config_keys.h). The parsers (config.cc,
// policy_config.cc, front/tenants.cc, upstream/provider.cc, accounting/config.cc) accept
// exactly the keys listed here; `kinference gateway --config-reference` prints the table
// as docs/configuration.md (tests/docs/CMakeLists.txt checks that the two agree).
//
// Thread-safety: constant data; the functions are pure.
#pragma once

#include <set>
#include <span>
#include <string>
#include <string_view>

#include "common/config_keys.h"

namespace kinference::gateway {

// The gateway's keys followed by the accounting section's.
std::span<const ConfigKey> GatewayConfigKeys();

// The keys a gateway config accepts directly under `section` ("" for the top level,
// "pools[]" for a pool entry, "listen.tls", ...).
std::set<std::string> ConfigSection(std::string_view section);

// docs/configuration.md.
std::string GatewayConfigReference();

}  // namespace kinference::gateway
