#include "common/config_keys.h"

namespace kinference {

std::set<std::string> KeysUnder(std::span<const ConfigKey> keys, std::string_view section) {
  std::set<std::string> out;
  for (const ConfigKey& k : keys) {
    std::string_view rest = k.path;
    if (!section.empty()) {
      if (!rest.starts_with(section) || rest.size() <= section.size() ||
          rest[section.size()] != '.')
        continue;
      rest.remove_prefix(section.size() + 1);
    }
    rest = rest.substr(0, rest.find('.'));
    if (rest.ends_with("[]")) rest.remove_suffix(2);
    if (!rest.empty() && !rest.starts_with("<")) out.emplace(rest);
  }
  return out;
}

namespace {

// A table cell: '|' escaped, never empty.
std::string Cell(std::string_view text, bool code) {
  if (text.empty()) return "";
  std::string out = code ? "`" : "";
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  if (code) out += '`';
  return out;
}

}  // namespace

std::string ConfigReferenceMarkdown(std::span<const ConfigKey> keys, std::string_view title,
                                    std::string_view intro) {
  std::string out = "# " + std::string(title) + "\n\n" + std::string(intro) + "\n\n";
  out += "| Key | Type | Default | Meaning |\n|---|---|---|---|\n";
  for (const ConfigKey& k : keys) {
    out += "| " + Cell(k.path, true) + " | " + Cell(k.type, false) + " | " +
           Cell(k.default_value, true) + " | " + Cell(k.meaning, false) + " |\n";
  }
  return out;
}

}  // namespace kinference
