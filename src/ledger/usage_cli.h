// Registers `kinference usage`: the same usage queries as GET /v1/usage, run directly
// against a ledger store, for operators and finance (no gateway needed).
//
//   kinference usage (--config GATEWAY_YAML | --sqlite PATH | --postgres CONNINFO)
//                    [--from T] [--to T] [--group-by tenant,model,...] [--tenant T]
//                    [--model M] [--format json|csv] [--records [--limit N]]
// T: RFC 3339, a date or Unix seconds (defaults: the last 24 hours). --records prints
// the raw records instead, one JSON object per line (oldest first, at most --limit,
// default 100000). Exit 0 on success, 1 with a message on stderr otherwise.
// Thread-safety: call from main() only.
#pragma once

#include <CLI/CLI.hpp>

namespace kinference::ledger {
void RegisterUsageCommand(CLI::App& app);
}  // namespace kinference::ledger
