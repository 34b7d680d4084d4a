#include "policy/request_text.h"

#include <openssl/evp.h>

#include <boost/json/parse.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

namespace kinference::policy {
namespace {

void Append(std::string& out, std::string_view s) {
  if (!out.empty()) out.push_back('\n');
  out.append(s);
}

// A number as the digits a person would have typed: integral values (4111111111111111.0,
// 4.111111111111111e15) as integers, so a card number sent as a float is still seen.
void AppendDouble(std::string& out, double d) {
  if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 1e19) {
    Append(out, d < 0 ? "-" + std::to_string(static_cast<uint64_t>(-d))
                      : std::to_string(static_cast<uint64_t>(d)));
  }
}

// An inline text document ({"type":"base64","media_type":"text/...","data":...}, the
// Anthropic Messages API's document source): its decoded text (OpenSSL's base64).
void AppendBase64Text(std::string& out, const boost::json::object& o) {
  const auto* type = o.if_contains("type");
  const auto* media = o.if_contains("media_type");
  const auto* data = o.if_contains("data");
  if (!type || !media || !data || !type->is_string() || !media->is_string() || !data->is_string() ||
      type->get_string() != "base64" || !media->get_string().starts_with("text/"))
    return;
  const auto& in = data->get_string();
  std::string decoded(3 * (in.size() / 4) + 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                          reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  if (n <= 0) return;
  decoded.resize(static_cast<size_t>(n));
  while (!decoded.empty() && decoded.back() == '\0') decoded.pop_back();  // padding
  Append(out, decoded);
}

// Depth-first over `stack` (top first). An explicit stack: a deeply nested body must not
// exhaust the thread's stack.
std::string Walk(std::vector<const boost::json::value*> stack) {
  std::string out;
  while (!stack.empty()) {
    const boost::json::value* v = stack.back();
    stack.pop_back();
    switch (v->kind()) {
      case boost::json::kind::string:
        Append(out, v->get_string());
        break;
      case boost::json::kind::int64:
        Append(out, std::to_string(v->get_int64()));
        break;
      case boost::json::kind::uint64:
        Append(out, std::to_string(v->get_uint64()));
        break;
      case boost::json::kind::double_:
        AppendDouble(out, v->get_double());
        break;
      case boost::json::kind::array: {
        const auto& a = v->get_array();
        for (auto it = a.rbegin(); it != a.rend(); ++it) stack.push_back(&*it);
        break;
      }
      case boost::json::kind::object: {
        const auto& o = v->get_object();
        for (const auto& kv : o) Append(out, kv.key());  // keys carry data too
        AppendBase64Text(out, o);
        for (auto it = o.end(); it != o.begin();) stack.push_back(&(--it)->value());
        break;
      }
      default:
        break;
    }
  }
  return out;
}

}  // namespace

std::string RequestScanText(const boost::json::value& body) { return Walk({&body}); }

std::string RequestScanText(const boost::json::object& body) {
  // The top-level object without copying it: its keys, then its values.
  std::string keys;
  for (const auto& kv : body) Append(keys, kv.key());
  std::vector<const boost::json::value*> stack;
  for (auto it = body.end(); it != body.begin();) stack.push_back(&(--it)->value());
  std::string values = Walk(std::move(stack));
  if (!values.empty()) Append(keys, values);
  return keys;
}

void AppendScanText(std::string& scan_text, std::string_view item) {
  if (!item.empty()) Append(scan_text, item);
}

std::string RequestScanText(std::string_view raw_json) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(raw_json, ec);
  if (ec) return std::string(raw_json);
  return RequestScanText(v);
}

}  // namespace kinference::policy
