#include "policy/taggers.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace kinference::policy {
namespace {

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::vector<std::string> ParseTagHeader(std::string_view value) {
  std::set<std::string> out;
  size_t pos = 0;
  while (pos <= value.size()) {
    size_t comma = value.find(',', pos);
    if (comma == std::string_view::npos) comma = value.size();
    std::string item(value.substr(pos, comma - pos));
    auto not_space = [](char c) { return !std::isspace(static_cast<unsigned char>(c)); };
    item.erase(item.begin(), std::find_if(item.begin(), item.end(), not_space));
    item.erase(std::find_if(item.rbegin(), item.rend(), not_space).base(), item.end());
    for (auto& c : item) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool ok = !item.empty() && std::all_of(item.begin(), item.end(), [](char c) {
      return IsAlnum(c) || c == ':' || c == '.' || c == '_' || c == '-';
    });
    if (ok) out.insert(item);
    pos = comma + 1;
  }
  return {out.begin(), out.end()};
}

int64_t EstimateTokens(std::string_view text) {
  return static_cast<int64_t>((text.size() + 3) / 4);
}

std::vector<std::string> RunTaggers(const TaggerConfig& config, const TaggerInput& input) {
  std::set<std::string> tags;
  if (config.pii) {
    for (auto& t : PiiTags(input.text, input.values, input.role_values)) tags.insert(t);
  }
  if (config.simple) {
    int64_t tokens = input.prompt_tokens >= 0 ? input.prompt_tokens : EstimateTokens(input.text);
    if (tokens <= config.simple_max_prompt_tokens && !input.tools_present) tags.insert("simple");
  }
  if (config.trust_tag_header && !input.tag_header.empty()) {
    for (auto& t : ParseTagHeader(input.tag_header)) tags.insert(t);
  }
  return {tags.begin(), tags.end()};
}

}  // namespace kinference::policy
