// The request path of http::Server: one keep-alive request (a chat completion's header
// as the openai-python SDK sends it, ~14 fields, plus `extra` more, and a 1 KB body) in,
// a small whole response out, over loopback. Client and server run on the benchmark's
// thread (the server's io_context is driven between the client's non-blocking socket
// calls), so the time per iteration is the whole exchange's CPU work: both sides' system
// calls, Beast's parse, the session's copy of the request into http::Request and the
// handler. Arguments: extra header fields, and whether ServerOptions::header_check is set.
#include <benchmark/benchmark.h>

#include <boost/asio.hpp>
#include <optional>
#include <string>

#include "http/server.h"

namespace kinference::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

std::string RequestBytes(int extra) {
  const std::string body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" +
                           std::string(960, 'a') + "\"}]}";
  std::string r =
      "POST /v1/chat/completions HTTP/1.1\r\n"
      "Host: 127.0.0.1:8000\r\n"
      "Accept-Encoding: gzip, deflate\r\n"
      "Connection: keep-alive\r\n"
      "Accept: application/json\r\n"
      "Content-Type: application/json\r\n"
      "User-Agent: OpenAI/Python 1.99.9\r\n"
      "X-Stainless-Lang: python\r\n"
      "X-Stainless-Package-Version: 1.99.9\r\n"
      "X-Stainless-OS: Linux\r\n"
      "X-Stainless-Arch: x64\r\n"
      "X-Stainless-Runtime: CPython\r\n"
      "X-Stainless-Runtime-Version: 3.11.2\r\n"
      "Authorization: Bearer sk-0123456789abcdef0123456789abcdef\r\n"
      "X-Stainless-Retry-Count: 0\r\n";
  for (int i = 0; i < extra; ++i) {
    r += "X-Extra-" + std::to_string(i) + ": " + std::string(32, 'v') + "\r\n";
  }
  return r + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

void BM_ServerRequest(benchmark::State& state) {
  asio::io_context io;
  ServerOptions options;
  if (state.range(1) != 0) {
    options.header_check = [](const Request& head) {
      benchmark::DoNotOptimize(head.headers.items.data());
      return Status::Ok();
    };
  }
  std::optional<Server> server;
  server.emplace(io, options);
  server->Route("POST", "/v1/chat/completions", [](Request r, std::shared_ptr<ResponseWriter> w) {
    benchmark::DoNotOptimize(r.body.data());
    w->Send(200, "application/json", "{}");
  });
  auto port = server->Start();
  if (!port.ok()) {
    state.SkipWithError(port.status().message().c_str());
    return;
  }
  tcp::socket client(io);
  client.connect({asio::ip::make_address("127.0.0.1"), *port});
  client.set_option(tcp::no_delay(true));
  client.non_blocking(true);
  const std::string request = RequestBytes(static_cast<int>(state.range(0)));
  std::string got;
  char buf[4096];
  for (auto _ : state) {
    asio::write(client, asio::buffer(request));
    got.clear();
    while (!got.ends_with("\r\n\r\n{}")) {
      io.run_one();
      boost::system::error_code ec;
      size_t n = client.read_some(asio::buffer(buf), ec);
      if (ec && ec != asio::error::would_block) {
        state.SkipWithError(ec.message().c_str());
        return;
      }
      got.append(buf, n);
    }
  }
  state.SetItemsProcessed(state.iterations());
  client.close();
  server->Stop();
  io.poll();
}
BENCHMARK(BM_ServerRequest)
    ->ArgNames({"extra_headers", "header_check"})
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({32, 0})
    ->Args({32, 1});

}  // namespace
}  // namespace kinference::http

BENCHMARK_MAIN();
