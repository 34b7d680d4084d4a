// End to end on loopback with real processes: one `kinference engine-sim` behind two
// gateways, `upstream_streaming: always` (default) and `as_requested`. Non-streamed
// requests get the same non-streamed objects from both; only the first observes their
// TTFT. Assertions are on behaviour, never on wall-clock times.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fstream>
#include <memory>
#include <string>

#include "http/client.h"
#include "testing/launch.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using kinference::testing::ChildProcess;
using kinference::testing::LaunchKinference;

constexpr const char* kModel = "stream-model";

std::string WriteConfig(const std::string& name, uint16_t sim_port, const std::string& mode) {
  std::string path = ::testing::TempDir() + "/" + name + "-" + std::to_string(getpid()) + ".yaml";
  std::ofstream out(path);
  out << "listen: {address: 127.0.0.1, port: 0}\n"
      << "time_scale: 20\nupstream_streaming: " << mode << "\n"
      << "pools:\n  - {name: sim, model: " << kModel
      << ", endpoints: [\"http://127.0.0.1:" << sim_port << "\"]}\n";
  return path;
}

http::Response Call(uint16_t port, std::string method, std::string target, std::string body = {}) {
  http::ClientRequest r;
  r.method = std::move(method);
  r.port = port;
  r.target = std::move(target);
  r.body = std::move(body);
  r.header_timeout_s = 60;  // hang guard only
  auto res = http::FetchSync(r);
  EXPECT_TRUE(res.ok()) << res.status().message();
  return res.ok() ? *res : http::Response{};
}

double Ttfts(uint16_t port) {
  std::string text = Call(port, "GET", "/metrics").body;
  std::string series =
      std::string("kinference_time_to_first_token_seconds_count{model=\"") + kModel + "\"} ";
  size_t at = text.find(series);
  return at == std::string::npos ? 0 : std::stod(text.substr(at + series.size()));
}

// Same keys with non-null values, and the same value kinds, recursively (arrays: their
// first elements). A null field and an absent one are alike to OpenAI clients (the schema
// makes them optional and nullable), and a stream cannot carry the fields only vLLM's
// non-streamed objects have (prompt_token_ids, kv_transfer_params, ...): they are null
// unless the request asked for them, and such requests are never streamed upstream
// (api::StreamsFaithfully). Every value that is set must match in kind.
size_t NonNullKeys(const json::object& o) {
  size_t n = 0;
  for (const auto& [k, v] : o) n += v.is_null() ? 0 : 1;
  return n;
}

void ExpectSameShape(const json::value& a, const json::value& b, const std::string& where) {
  ASSERT_EQ(a.kind(), b.kind()) << where;
  if (a.is_array()) {
    ASSERT_EQ(a.as_array().empty(), b.as_array().empty()) << where;
    if (!a.as_array().empty()) ExpectSameShape(a.as_array()[0], b.as_array()[0], where + "[0]");
    return;
  }
  if (!a.is_object()) return;
  for (const auto& [k, v] : a.as_object()) {
    if (v.is_null()) continue;
    ASSERT_TRUE(b.as_object().contains(k)) << where << "." << k;
    ExpectSameShape(v, b.at(k), where + "." + std::string(k));
  }
  EXPECT_EQ(NonNullKeys(a.as_object()), NonNullKeys(b.as_object())) << where;
}

TEST(UpstreamStreamingIntegrationTest, NonStreamedRequestsObserveTtftAndKeepTheirShape) {
  auto sim = LaunchKinference(
      {"engine-sim", "--port", "0", "--time-scale", "20", "--served-model-name", kModel});
  ASSERT_TRUE(sim) << "engine-sim did not start";
  auto streaming =
      LaunchKinference({"gateway", "--config", WriteConfig("gw-always", sim->port(), "always")});
  auto as_requested = LaunchKinference(
      {"gateway", "--config", WriteConfig("gw-as-requested", sim->port(), "as_requested")});
  ASSERT_TRUE(streaming && as_requested) << "gateway did not start";

  const std::string chat = std::string(R"({"model":")") + kModel +
                           R"(","max_tokens":6,"messages":[{"role":"user","content":"hi"}]})";
  const std::string cmpl =
      std::string(R"({"model":")") + kModel + R"(","max_tokens":4,"prompt":"once upon"})";
  const std::string msg = std::string(R"({"model":")") + kModel +
                          R"(","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})";
  struct Route {
    const char* path;
    const std::string& body;
  };
  for (const Route& route : {Route{"/v1/chat/completions", chat}, Route{"/v1/completions", cmpl},
                             Route{"/v1/messages", msg}}) {
    auto a = Call(streaming->port(), "POST", route.path, route.body);
    auto b = Call(as_requested->port(), "POST", route.path, route.body);
    ASSERT_EQ(a.status, 200) << route.path << ": " << a.body;
    ASSERT_EQ(b.status, 200) << route.path << ": " << b.body;
    EXPECT_EQ(a.headers.Find("content-type"), "application/json");
    json::value va = json::parse(a.body);
    json::value vb = json::parse(b.body);
    ExpectSameShape(va, vb, route.path);
    ExpectSameShape(vb, va, route.path);
  }
  EXPECT_EQ(Ttfts(streaming->port()), 3);
  EXPECT_EQ(Ttfts(as_requested->port()), 0);
}

}  // namespace
}  // namespace kinference::gateway
