#include "common/status.h"

namespace kinference {

int HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return 200;
    case ErrorCode::kInvalidArgument: return 400;
    case ErrorCode::kUnauthenticated: return 401;
    case ErrorCode::kPermissionDenied: return 403;
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kPayloadTooLarge: return 413;
    case ErrorCode::kResourceExhausted: return 429;
    case ErrorCode::kInternal: return 500;
    case ErrorCode::kUnavailable: return 503;
    case ErrorCode::kDeadlineExceeded: return 504;
    case ErrorCode::kCancelled: return 499;
  }
  return 500;
}

const char* OpenAiErrorType(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kPayloadTooLarge: return "invalid_request_error";
    case ErrorCode::kUnauthenticated: return "authentication_error";
    case ErrorCode::kPermissionDenied: return "permission_error";
    case ErrorCode::kNotFound: return "not_found_error";
    case ErrorCode::kResourceExhausted: return "rate_limit_error";
    case ErrorCode::kUnavailable: return "service_unavailable_error";
    case ErrorCode::kDeadlineExceeded: return "timeout_error";
    default: return "internal_server_error";
  }
}

}  // namespace kinference
