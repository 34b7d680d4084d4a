#include "policy/request_text.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <boost/json/parse.hpp>
#include <cmath>
#include <cstdint>
#include <set>

namespace kinference::policy {
namespace {

// Fields whose values are the schema's own words or identifiers, not what a person wrote.
constexpr std::array<std::string_view, 8> kStructuralKeys{
    "role", "type", "media_type", "detail", "format", "id", "tool_call_id", "tool_use_id"};

bool Structural(std::string_view key) {
  return std::find(kStructuralKeys.begin(), kStructuralKeys.end(), key) != kStructuralKeys.end();
}

class Scanner {
 public:
  // Appends one item; `value`: a span the split-value check may join with its neighbour.
  void Append(std::string_view s, bool value) {
    if (!scan_.text.empty()) scan_.text.push_back('\n');
    if (value && !s.empty()) {
      scan_.values.push_back({scan_.text.size(), s.size()});
      if (!roles_.empty()) scan_.role_values[roles_.back()].push_back(scan_.values.back());
    }
    scan_.text.append(s);
  }

  // A number as the digits a person would have typed: integral values (4111111111111111.0,
  // 4.111111111111111e15) as integers, so a card number sent as a float is still seen.
  void AppendDouble(double d, bool value) {
    if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 1e19) {
      Append(d < 0 ? "-" + std::to_string(static_cast<uint64_t>(-d))
                   : std::to_string(static_cast<uint64_t>(d)),
             value);
    }
  }

  // Depth-first over `stack` (top first). An explicit stack: a deeply nested body must not
  // exhaust the thread's stack. The flag says whether a string there is a value (not the
  // value of a structural key).
  void Walk(std::vector<std::pair<const boost::json::value*, bool>> stack) {
    while (!stack.empty()) {
      auto [v, value] = stack.back();
      stack.pop_back();
      if (!v) {  // the end of a message's subtree
        roles_.pop_back();
        continue;
      }
      switch (v->kind()) {
        case boost::json::kind::string:
          Append(v->get_string(), value);
          break;
        case boost::json::kind::int64:
          Append(std::to_string(v->get_int64()), value);
          break;
        case boost::json::kind::uint64:
          Append(std::to_string(v->get_uint64()), value);
          break;
        case boost::json::kind::double_:
          AppendDouble(v->get_double(), value);
          break;
        case boost::json::kind::array: {
          const auto& a = v->get_array();
          for (auto it = a.rbegin(); it != a.rend(); ++it) stack.push_back({&*it, true});
          break;
        }
        case boost::json::kind::object: {
          const auto& o = v->get_object();
          for (const auto& kv : o) Append(kv.key(), false);  // keys carry data too
          Inspect(o);
          if (std::string_view role = StringField(o, "role"); !role.empty()) {
            stack.push_back({nullptr, false});  // popped once the message is walked
            roles_.push_back(RoleGroup(role));
          }
          for (auto it = o.end(); it != o.begin();) {
            --it;
            stack.push_back({&it->value(), !Structural(it->key())});
          }
          break;
        }
        default:
          break;
      }
    }
  }

  // Pushes the top-level object's values (its keys already appended) in order.
  void WalkObject(const boost::json::object& body) {
    std::vector<std::pair<const boost::json::value*, bool>> stack;
    for (auto it = body.end(); it != body.begin();) {
      --it;
      stack.push_back({&it->value(), !Structural(it->key())});
    }
    Walk(std::move(stack));
  }

  // A request's top-level fields that carry a prompt in a form no tagger reads: token
  // ids (a completions `prompt` of integers, or of arrays of them: vLLM and OpenAI's
  // legacy completions accept both) and vLLM's `prompt_embeds`.
  void InspectTopLevel(const boost::json::object& body) {
    if (const auto* p = body.if_contains("prompt"); p && p->is_array()) {
      auto number = [](const boost::json::value& v) { return v.is_number(); };
      for (const auto& item : p->get_array()) {
        const auto* inner = item.if_array();
        if (number(item) || (inner && std::any_of(inner->begin(), inner->end(), number))) {
          unscannable_.insert("tokens");
          break;
        }
      }
    }
    if (const auto* e = body.if_contains("prompt_embeds"); e && !e->is_null())
      unscannable_.insert("embeddings");
  }

  RequestScan Take() {
    scan_.unscannable.assign(unscannable_.begin(), unscannable_.end());
    return std::move(scan_);
  }

 private:
  static std::string_view StringField(const boost::json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
  }

  // A content block: an inline text document is decoded into the scan text; content the
  // taggers cannot read is recorded by kind.
  void Inspect(const boost::json::object& o) {
    std::string_view type = StringField(o, "type");
    if (type.empty()) return;
    if (type == "base64" && StringField(o, "media_type").starts_with("text/")) {
      AppendBase64Text(StringField(o, "data"));
    } else if (type == "image_url" || type == "input_image" || type == "image") {
      unscannable_.insert("image");
    } else if (type == "input_audio") {
      unscannable_.insert("audio");
    } else if (type == "file" || type == "input_file" || type == "container_upload") {
      unscannable_.insert("file");
    } else if (type == "document") {
      const auto* src = o.if_contains("source");
      std::string_view st = src && src->is_object() ? StringField(src->get_object(), "type") : "";
      bool text =
          st == "text" || st == "content" ||
          (st == "base64" && StringField(src->get_object(), "media_type").starts_with("text/"));
      if (!text) unscannable_.insert("file");
    }
  }

  // An inline text document ({"type":"base64","media_type":"text/...","data":...}, the
  // Anthropic Messages API's document source): its decoded text (OpenSSL's base64).
  void AppendBase64Text(std::string_view in) {
    if (in.empty()) return;
    std::string decoded(3 * (in.size() / 4) + 3, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                            reinterpret_cast<const unsigned char*>(in.data()),
                            static_cast<int>(in.size()));
    if (n <= 0) return;
    decoded.resize(static_cast<size_t>(n));
    while (!decoded.empty() && decoded.back() == '\0') decoded.pop_back();  // padding
    Append(decoded, true);
  }

  // The index of `role`'s group in scan_.role_values (a request has a handful of roles).
  size_t RoleGroup(std::string_view role) {
    for (size_t i = 0; i < role_names_.size(); ++i) {
      if (role_names_[i] == role) return i;
    }
    role_names_.emplace_back(role);
    scan_.role_values.emplace_back();
    return role_names_.size() - 1;
  }

  RequestScan scan_;
  std::set<std::string> unscannable_;
  std::vector<std::string> role_names_;  // of scan_.role_values' groups
  std::vector<size_t> roles_;            // groups of the messages being walked, innermost last
};

}  // namespace

RequestScan ScanRequest(const boost::json::value& body) {
  Scanner s;
  if (const auto* o = body.if_object()) s.InspectTopLevel(*o);
  s.Walk({{&body, true}});
  return s.Take();
}

RequestScan ScanRequest(const boost::json::object& body) {
  // The top-level object without copying it: its keys, then its values.
  Scanner s;
  for (const auto& kv : body) s.Append(kv.key(), false);
  s.InspectTopLevel(body);
  s.WalkObject(body);
  return s.Take();
}

RequestScan ScanRequest(std::string_view raw_json) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(raw_json, ec);
  if (!ec) return ScanRequest(v);
  Scanner s;
  s.Append(raw_json, true);
  return s.Take();
}

std::string RequestScanText(const boost::json::value& body) { return ScanRequest(body).text; }
std::string RequestScanText(const boost::json::object& body) { return ScanRequest(body).text; }
std::string RequestScanText(std::string_view raw_json) { return ScanRequest(raw_json).text; }

void AppendScanText(std::string& scan_text, std::string_view item) {
  if (item.empty()) return;
  if (!scan_text.empty()) scan_text.push_back('\n');
  scan_text.append(item);
}

}  // namespace kinference::policy
