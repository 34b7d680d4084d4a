// A config file's keys as one table: each key's path, type, default and meaning. A parser
// takes the keys it accepts from its table (KeysUnder) and refuses any other, and the
// configuration reference (docs/configuration.md) is printed from the same table
// (ConfigReferenceMarkdown), so a key cannot be accepted without being documented;
// tests/docs checks the document against the printout.
//
// Paths: components joined by '.'; "name[]" is a list whose items are maps ("pools[].name"),
// "<name>" any map key chosen by the user ("accounting.limits.tenants.<tenant>").
//
// Thread-safety: the tables are constant data; the functions are pure.
#pragma once

#include <set>
#include <span>
#include <string>
#include <string_view>

namespace kinference {

struct ConfigKey {
  std::string_view path;           // e.g. "listen.tls.cert_file"
  std::string_view type;           // e.g. "string", "integer", "seconds", "map", "list"
  std::string_view default_value;  // as the parser applies it; "" when required or none
  std::string_view meaning;        // one or two sentences; where the details are
};

// The keys directly under `section` ("" for the top level; "pools[]" for a pool entry):
// the next component of every path below it, without a trailing "[]". A "<...>" component
// (a user's map key) is never among them.
std::set<std::string> KeysUnder(std::span<const ConfigKey> keys, std::string_view section);

// The table as Markdown: `title`, `intro` (a paragraph), then one row per key in table
// order (path, type, default, meaning). Deterministic.
std::string ConfigReferenceMarkdown(std::span<const ConfigKey> keys, std::string_view title,
                                    std::string_view intro);

}  // namespace kinference
