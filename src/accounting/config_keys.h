// The keys of the gateway config's `accounting` section (config.h), one row each with
// type, default and meaning (common/config_keys.h). ParseAccountingConfig accepts exactly
// these; docs/configuration.md is printed from them.
//
// Thread-safety: constant data.
#pragma once

#include <span>

#include "common/config_keys.h"

namespace kinference::accounting {

// Paths start with "accounting.". A tenant's entry under limits.tenants takes the keys of
// limits.default.
std::span<const ConfigKey> AccountingConfigKeys();

}  // namespace kinference::accounting
