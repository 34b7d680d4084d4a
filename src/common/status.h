// Status and Result<T>: the project's one error policy on the request path.
//
// Functions that can fail on a request's path return Status or Result<T> instead of
// throwing. Exceptions are used only at start-up and while parsing configuration.
// ErrorCode values map one-to-one onto HTTP statuses (see HttpStatusFor) so that a
// shell can turn any error into the OpenAI or Anthropic error shape.
//
// Thread-safety: plain values; copy freely.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace kinference {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,    // 400: malformed or semantically invalid input
  kUnauthenticated,    // 401
  kPermissionDenied,   // 403: e.g. rejected by policy
  kNotFound,           // 404: unknown model, route or endpoint
  kPayloadTooLarge,    // 413
  kResourceExhausted,  // 429: queue full, rate limited
  kInternal,           // 500
  kUnavailable,        // 503: no healthy endpoint, upstream down
  kDeadlineExceeded,   // 504
  kCancelled,          // client went away; never sent to a client
};

class Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The field the error is about (OpenAI's `param`), empty when none.
  const std::string& param() const { return param_; }
  Status& WithParam(std::string p) {
    param_ = std::move(p);
    return *this;
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  std::string param_;
};

// A kInvalidArgument status about `param` (OpenAI's `param`; empty when none).
inline Status InvalidArgument(std::string message, std::string param = {}) {
  Status s(ErrorCode::kInvalidArgument, std::move(message));
  s.WithParam(std::move(param));
  return s;
}

// HTTP status code for an error code (200 for kOk, 499 for kCancelled).
int HttpStatusFor(ErrorCode code);
// OpenAI error `type` string for an error code, e.g. "invalid_request_error".
const char* OpenAiErrorType(ErrorCode code);

// A value or a non-ok Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design
  Result(ErrorCode code, std::string msg) : v_(Status(code, std::move(msg))) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  // The error; Status::Ok() when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace kinference
