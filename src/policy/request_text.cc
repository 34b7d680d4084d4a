#include "policy/request_text.h"

#include <boost/json/parse.hpp>
#include <vector>

namespace kinference::policy {
namespace {

void Append(std::string& out, std::string_view s) {
  if (!out.empty()) out.push_back('\n');
  out.append(s);
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
      case boost::json::kind::array: {
        const auto& a = v->get_array();
        for (auto it = a.rbegin(); it != a.rend(); ++it) stack.push_back(&*it);
        break;
      }
      case boost::json::kind::object: {
        const auto& o = v->get_object();
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
  std::vector<const boost::json::value*> stack;
  for (auto it = body.end(); it != body.begin();) stack.push_back(&(--it)->value());
  return Walk(std::move(stack));
}

std::string RequestScanText(std::string_view raw_json) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(raw_json, ec);
  if (ec) return std::string(raw_json);
  return RequestScanText(v);
}

}  // namespace kinference::policy
