#include "api/openai/error.h"

#include <fmt/format.h>

#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace kinference::api {

std::string OpenAiErrorBody(const Status& status) {
  return OpenAiErrorBody(status, HttpStatusFor(status.code()));
}

std::string OpenAiErrorBody(const Status& status, int http_status) {
  boost::json::object error;
  error["message"] = status.message();
  error["type"] = OpenAiErrorType(status.code());
  if (status.param().empty()) {
    error["param"] = nullptr;
  } else {
    error["param"] = status.param();
  }
  error["code"] = http_status;
  boost::json::object root;
  root["error"] = std::move(error);
  return boost::json::serialize(root);
}

std::optional<std::string> ReplaceUpstreamStreamError(std::string_view data,
                                                      std::string_view request_id) {
  // Cheap test first: this runs on every relayed chunk, which rarely mentions "error".
  if (data.empty() || data.front() != '{' || data.find("error") == std::string_view::npos)
    return std::nullopt;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(data, ec);
  const boost::json::object* o = ec ? nullptr : v.if_object();
  if (!o) return std::nullopt;
  const boost::json::value* code = nullptr;
  bool overloaded = false;
  if (const auto* e = o->if_contains("error"); e && !e->is_null()) {
    code = e->is_object() ? e->get_object().if_contains("code") : nullptr;
    const auto* type = e->is_object() ? e->get_object().if_contains("type") : nullptr;
    overloaded = type && type->is_string() && type->get_string() == "overloaded_error";
  } else if (const auto* obj = o->if_contains("object");
             obj && obj->is_string() && obj->get_string() == "error") {
    code = o->if_contains("code");
  } else {
    return std::nullopt;
  }
  int upstream = 500;
  if (code && code->is_int64() && code->get_int64() >= 400 && code->get_int64() <= 599)
    upstream = static_cast<int>(code->get_int64());
  // Overload keeps its class (as for a whole error body): 503 overloaded_error.
  overloaded = overloaded || upstream == 529;
  int status = overloaded                                             ? 503
               : upstream < 500 || upstream == 503 || upstream == 504 ? upstream
                                                                      : 502;
  std::string message =
      fmt::format("The model server {} during the stream (upstream status {}xx); request id {}.",
                  overloaded       ? "was overloaded"
                  : upstream < 500 ? "rejected the request"
                                   : "failed",
                  upstream / 100, request_id);
  const char* type = overloaded       ? "overloaded_error"
                     : upstream < 500 ? "invalid_request_error"
                                      : "api_error";
  boost::json::object error{
      {"message", message}, {"type", type}, {"param", nullptr}, {"code", status}};
  return boost::json::serialize(boost::json::object{{"error", std::move(error)}});
}

}  // namespace kinference::api
