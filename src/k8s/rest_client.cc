#include "k8s/rest_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <fstream>
#include <optional>
#include <sstream>

#include "k8s/resource.h"

namespace kinference::k8s {

std::string ApiErrorMessage(const ApiResponse& response) {
  boost::system::error_code ec;
  auto v = boost::json::parse(response.body, ec);
  if (!ec && v.is_object()) {
    const auto& o = v.as_object();
    if (const auto* kind = o.if_contains("kind"); kind && kind->is_string() && *kind == "Status") {
      std::string reason(StringAt(o, {"reason"}));
      std::string message(StringAt(o, {"message"}));
      return fmt::format("{} {}: {}", response.status, reason.empty() ? "Error" : reason, message);
    }
  }
  std::string body = response.body.substr(0, 200);
  return fmt::format("HTTP {}: {}", response.status, body);
}

Result<boost::json::object> ParseObject(const ApiResponse& response) {
  boost::system::error_code ec;
  auto v = boost::json::parse(response.body, ec);
  if (ec || !v.is_object())
    return Status(ErrorCode::kInternal,
                  fmt::format("API server sent a body that is not a JSON object ({} bytes)",
                              response.body.size()));
  return std::move(v.as_object());
}

RestClient::RestClient(boost::asio::any_io_executor executor, ClusterConfig config)
    : executor_(std::move(executor)), config_(std::move(config)) {}

std::string RestClient::Token() {
  if (!config_.token.empty()) return config_.token;
  if (config_.token_file.empty()) return {};
  auto now = std::chrono::steady_clock::now();
  TokenCache& t = *tokens_;
  if (t.stale || now - t.read_at > std::chrono::duration<double>(kTokenRereadS)) {
    std::ifstream in(config_.token_file);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      std::string text = ss.str();
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
        text.pop_back();
      t.token = std::move(text);
      t.read_at = now;
      t.stale = false;
    } else {
      // Keep the last token: the kubelet replaces the file atomically, so this is rare.
      spdlog::warn("kubernetes: cannot read token file {}; using the last token",
                   config_.token_file);
    }
  }
  return t.token;
}

http::ClientRequest RestClient::Base(std::string method, std::string target) {
  http::ClientRequest r;
  r.method = std::move(method);
  r.host = config_.host;
  r.port = config_.port;
  r.target = config_.path_prefix + target;
  r.tls = config_.tls;
  r.ca_file = config_.ca_file;
  r.ca_pem = config_.ca_pem;
  r.client_cert_pem = config_.client_cert_pem;
  r.client_key_pem = config_.client_key_pem;
  r.headers.Add("Accept", "application/json");
  r.headers.Add("User-Agent", "kinference");
  if (std::string token = Token(); !token.empty())
    r.headers.Add("Authorization", "Bearer " + token);
  r.content_type = "";
  return r;
}

void RestClient::Call(std::string method, std::string target, std::string body,
                      std::string_view content_type, Done done, double timeout_s) {
  http::ClientRequest r = Base(std::move(method), std::move(target));
  r.body = std::move(body);
  r.content_type =
      content_type.empty() && !r.body.empty() ? "application/json" : std::string(content_type);
  r.total_timeout_s = timeout_s;
  http::Fetch(executor_, std::move(r),
              [tokens = tokens_, done = std::move(done)](Result<http::Response> result) {
                if (!result.ok()) return done(result.status());
                if (result->status == 401) tokens->stale = true;
                done(ApiResponse{result->status, std::move(result->body)});
              });
}

std::shared_ptr<http::Call> RestClient::Watch(std::string target, double idle_timeout_s,
                                              WatchCallbacks cb) {
  http::ClientRequest r = Base("GET", std::move(target));
  r.idle_timeout_s = idle_timeout_s;
  r.header_timeout_s = kDefaultRequestTimeoutS;
  r.reuse_connection = false;  // a watch holds its connection; ending it closes it
  struct State {
    std::string partial;
    WatchCallbacks cb;
  };
  auto state = std::make_shared<State>();
  state->cb = std::move(cb);
  http::ClientCallbacks hc;
  hc.on_headers = [tokens = tokens_, state](int status, const http::Headers&) {
    if (status == 401) tokens->stale = true;
    if (state->cb.on_status) state->cb.on_status(status);
  };
  hc.on_data = [state](std::string_view data) {
    state->partial.append(data);
    size_t start = 0;
    while (true) {
      size_t nl = state->partial.find('\n', start);
      if (nl == std::string::npos) break;
      std::string_view line(state->partial.data() + start, nl - start);
      if (!line.empty() && state->cb.on_line) state->cb.on_line(line);
      start = nl + 1;
    }
    state->partial.erase(0, start);
  };
  hc.on_complete = [state](Status status) {
    // A body without a final newline (an error Status object) is one more line.
    if (!state->partial.empty() && state->cb.on_line) state->cb.on_line(state->partial);
    state->partial.clear();
    auto on_done = std::move(state->cb.on_done);
    state->cb = WatchCallbacks{};
    if (on_done) on_done(std::move(status));
  };
  return http::StartCall(executor_, std::move(r), std::move(hc));
}

Result<ApiResponse> CallSync(const ClusterConfig& config, std::string method, std::string target,
                             std::string body, std::string_view content_type, double timeout_s) {
  boost::asio::io_context io;
  RestClient client(io.get_executor(), config);
  std::optional<Result<ApiResponse>> result;
  client.Call(
      std::move(method), std::move(target), std::move(body), content_type,
      [&](Result<ApiResponse> r) { result = std::move(r); }, timeout_s);
  io.run();
  if (!result) return Status(ErrorCode::kInternal, "request did not complete");
  return std::move(*result);
}

}  // namespace kinference::k8s
