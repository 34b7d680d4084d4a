#include "api/openai/error.h"

#include <boost/json/object.hpp>
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

}  // namespace kinference::api
