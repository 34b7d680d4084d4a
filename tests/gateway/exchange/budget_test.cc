// Budgets and limits on the request path (docs/accounting.md; issue 25, items 1-3), with
// an in-process gateway and fake upstreams that bill what the test tells them: refusals
// that cannot pass soon tell the SDKs not to retry (x-should-retry: false, no
// Retry-After) and say when the budget resets; a request larger than a limit is a 400;
// a burst cannot overshoot a spend budget when the upstream bills far above the old
// estimate; the reservation is at the price of the endpoint the router picked.
// Assertions are on statuses, headers, counts and costs, never on wall-clock times.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/json.hpp>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/sse.h"
#include "fake_upstream.h"
#include "gateway/gateway.h"
#include "gateway_harness.h"
#include "http/server.h"

namespace kinference::gateway {
namespace {

namespace json = boost::json;
using testing::Eventually;
using testing::kChat;
using testing::kMessages;

std::string Url(uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

// A vLLM-like upstream that reports `prompt` and `completion` tokens of usage for every
// request (streamed or whole). With hold set, it answers nothing until Release().
class BillingUpstream {
 public:
  BillingUpstream(boost::asio::io_context& io, int64_t prompt, int64_t completion, bool hold,
                  int waiting = 0)
      : prompt_(prompt), completion_(completion), hold_(hold) {
    server_ = std::make_unique<http::Server>(io, http::ServerOptions{});
    server_->Route("POST", "/v1/chat/completions", [this](http::Request r, auto w) {
      ++requests_;
      const bool stream = json::parse(r.body).as_object().if_contains("stream") &&
                          json::parse(r.body).at("stream").as_bool();
      held_.push_back({std::move(w), stream});
      if (!hold_) Release();
    });
    server_->Route("GET", "/metrics", [waiting](http::Request, auto w) {
      w->Send(200, "text/plain",
              "# TYPE vllm:num_requests_running gauge\n"
              "vllm:num_requests_running{model_name=\"m\"} 0\n"
              "# TYPE vllm:num_requests_waiting gauge\n"
              "vllm:num_requests_waiting{model_name=\"m\"} " +
                  std::to_string(waiting) + "\n");
    });
    auto port = server_->Start();
    port_ = port.ok() ? *port : 0;
  }
  uint16_t port() const { return port_; }
  int requests() const { return requests_; }
  void Stop() { server_->Stop(); }
  // On the io thread: answers every held request.
  void Release() {
    const std::string usage =
        fmt::format(R"({{"prompt_tokens":{},"completion_tokens":{},"total_tokens":{}}})", prompt_,
                    completion_, prompt_ + completion_);
    for (auto& [w, stream] : held_) {
      if (!stream) {
        w->Send(200, "application/json",
                R"({"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,)"
                R"("message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],)"
                R"("usage":)" +
                    usage + "}");
        continue;
      }
      w->StartStream(200, "text/event-stream");
      w->Write(api::FormatSse(
          R"({"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,)"
          R"("delta":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]})"));
      w->Write(api::FormatSse(
          R"({"id":"c","object":"chat.completion.chunk","model":"m","choices":[],"usage":)" +
          usage + "}"));
      w->Write(api::FormatSse("[DONE]"));
      w->End();
    }
    held_.clear();
  }

 private:
  int64_t prompt_, completion_;
  bool hold_;
  std::unique_ptr<http::Server> server_;
  uint16_t port_ = 0;
  std::atomic<int> requests_{0};
  std::vector<std::pair<std::shared_ptr<http::ResponseWriter>, bool>> held_;  // io thread
};

class BudgetTest : public testing::GatewayHarness {
 protected:
  BillingUpstream& AddUpstream(int64_t prompt, int64_t completion, bool hold, int waiting = 0) {
    ups_.push_back(std::make_unique<BillingUpstream>(io(), prompt, completion, hold, waiting));
    BillingUpstream* u = ups_.back().get();
    OnStop([u] { u->Stop(); });
    return *u;
  }
  // One pool per (name, upstream, input and output nano-USD per token), all serving
  // model "m"; the default tenant gets `limits`.
  struct PoolSpec {
    std::string name;
    uint16_t port;
    accounting::NanoUsd input, output;
  };
  GatewayConfig Config(const std::vector<PoolSpec>& pools, accounting::TenantLimits limits) {
    GatewayConfig c;
    c.scrape_interval_s = 0.1;
    std::vector<accounting::PriceEntry> prices;
    for (const auto& p : pools) {
      PoolConfig pool;
      pool.name = p.name;
      pool.model = "m";
      pool.endpoints.push_back(ParseEndpointUrl(Url(p.port), "test"));
      c.pools.push_back(std::move(pool));
      accounting::PriceEntry e;
      e.provider = p.name;
      e.model = "m";
      const accounting::NanoUsd in = p.input * 1'000'000;  // prices are per million
      e.price = {
          .input = in, .cached_input = in, .cache_write = in, .output = p.output * 1'000'000};
      prices.push_back(e);
    }
    c.accounting.enabled = true;
    c.accounting.ledger.store = accounting::StoreKind::kNone;
    c.accounting.prices = accounting::PriceTable(std::move(prices));
    c.accounting.limits.default_limits = limits;
    return c;
  }
  void ReleaseAll(BillingUpstream& u) {
    std::promise<void> done;
    boost::asio::post(io_, [&] {
      u.Release();
      done.set_value();
    });
    done.get_future().wait();
  }

  std::vector<std::unique_ptr<BillingUpstream>> ups_;
  std::vector<std::unique_ptr<testing::FakeUpstream>> fakes_;
};

const accounting::NanoUsd kTwoTenthsOfACent = 2'000'000;  // USD 0.002

// Item 1: a spent budget answered 429 with Retry-After until UTC midnight (~66,000 s),
// which anthropic-sdk-python sleeps through before it raises; now: no Retry-After,
// x-should-retry: false, and the reset time in a header and the message, on both fronts.
TEST_F(BudgetTest, ExhaustedBudgetTellsTheSdksNotToRetryAndWhenItResets) {
  auto& up = AddUpstream(10, 10, /*hold=*/false);
  // A request costs at most 3 * 100 + 16 * 1000 nano-USD: one fits 20,000.
  Start(Config({{"p", up.port(), 100, 1000}}, {.spend_per_day = 20'000}));
  const std::string chat =
      R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hello"}]})";
  ASSERT_EQ(Post(chat).status, 200);  // spends 10 * 100 + 10 * 1000 = 11,000
  auto r = Post(chat);
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(json::parse(r.body).at("error").at("code"), "insufficient_quota");
  EXPECT_EQ(r.headers.Find("retry-after"), "");
  EXPECT_EQ(r.headers.Find("x-should-retry"), "false");
  EXPECT_EQ(r.headers.Find("x-kinference-budget-limit-usd"), "0.00002");
  EXPECT_NE(r.headers.Find("x-kinference-budget-reset").find("T00:00:00Z"), std::string::npos)
      << r.headers.Find("x-kinference-budget-reset");
  EXPECT_NE(r.body.find("Resets at "), std::string::npos) << r.body;
  http::Headers h;
  h.Add("anthropic-version", "2023-06-01");
  auto m = Post(kMessages, h, "/v1/messages");
  EXPECT_EQ(m.status, 429) << m.body;
  EXPECT_EQ(json::parse(m.body).at("error").at("type"), "rate_limit_error");
  EXPECT_EQ(m.headers.Find("retry-after"), "");
  EXPECT_EQ(m.headers.Find("x-should-retry"), "false");
  EXPECT_EQ(up.requests(), 1);
}

// Item 1: a request larger than the whole budget can never pass: 400 invalid_request_error
// saying so, on both fronts, never a 429 an SDK retries.
TEST_F(BudgetTest, RequestLargerThanTheWholeBudgetIsA400SayingItCanNeverPass) {
  auto& up = AddUpstream(10, 10, /*hold=*/false);
  Start(Config({{"p", up.port(), 100, 1000}}, {.spend_per_day = 20'000}));
  auto r = Post(R"({"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(r.status, 400) << r.body;
  auto err = json::parse(r.body).at("error");
  EXPECT_EQ(err.at("type"), "invalid_request_error");
  EXPECT_EQ(err.at("code"), "request_too_large");
  EXPECT_NE(r.body.find("can never pass"), std::string::npos) << r.body;
  EXPECT_EQ(r.headers.Find("retry-after"), "");
  EXPECT_EQ(r.headers.Find("x-should-retry"), "false");
  http::Headers h;
  h.Add("anthropic-version", "2023-06-01");
  auto m = Post(R"({"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}]})", h,
                "/v1/messages");
  EXPECT_EQ(m.status, 400) << m.body;
  EXPECT_EQ(json::parse(m.body).at("error").at("type"), "invalid_request_error");
  EXPECT_EQ(up.requests(), 0);
}

// Item 1: a limit that passes within seconds keeps its Retry-After and no x-should-retry.
TEST_F(BudgetTest, RateLimitResettingWithinSecondsKeepsRetryAfter) {
  auto& up = AddUpstream(10, 10, /*hold=*/false);
  Start(Config({{"p", up.port(), 100, 1000}}, {.requests_per_minute = 5}));
  int refused = 0;
  for (int i = 0; i < 10 && refused == 0; ++i) {
    auto r = Post(kChat);
    if (r.status == 200) continue;
    ++refused;
    EXPECT_EQ(r.status, 429) << r.body;
    const std::string wait(r.headers.Find("retry-after"));  // one request refills in 12 s
    ASSERT_FALSE(wait.empty());
    EXPECT_LE(std::stoi(wait), 12);
    EXPECT_EQ(r.headers.Find("x-should-retry"), "");
  }
  EXPECT_EQ(refused, 1);
}

// Item 2, the burst of issue 25: 50 concurrent requests without max_tokens, with a
// tool schema, against a USD 0.002 daily budget; the upstream bills 2,100 prompt and
// 4,000 completion tokens (810,000 nano-USD) each, which the estimate before (prompt
// text / 4 without the tools, 256 output tokens: 38,700 nano-USD) was far below: all 50
// were admitted and USD 0.0405 billed, 20x the budget. Reserving the worst case (tools
// counted, the model's 8,192-token context window at the output price: 1,430,900
// nano-USD) admits what the budget can pay for.
TEST_F(BudgetTest, BurstWithUpstreamBillingFarAboveTheEstimateStaysWithinTheBudget) {
  auto& up = AddUpstream(2100, 4000, /*hold=*/true);
  GatewayConfig c = Config({{"p", up.port(), 100, 150}}, {.spend_per_day = kTwoTenthsOfACent});
  c.accounting.estimate.model_context_tokens["m"] = 8192;
  Start(c);
  const std::string tool_doc(8000, 'x');
  const std::string body = json::serialize(json::object{
      {"model", "m"},
      {"messages", json::array{json::object{{"role", "user"}, {"content", "hello"}}}},
      {"tools",
       json::array{json::object{
           {"type", "function"},
           {"function", json::object{{"name", "f"},
                                     {"description", tool_doc},
                                     {"parameters", json::object{{"type", "object"}}}}}}}}});
  constexpr int kBurst = 50;
  std::vector<std::future<http::Response>> out;
  for (int i = 0; i < kBurst; ++i)
    out.push_back(std::async(std::launch::async, [&] { return Post(body); }));
  // Every request is either held by the upstream (admitted) or answered (refused).
  ASSERT_TRUE(Eventually([&] {
    int done = 0;
    for (auto& f : out)
      if (f.wait_for(std::chrono::seconds(0)) == std::future_status::ready) ++done;
    return done + up.requests() == kBurst;
  }));
  const int admitted = up.requests();
  ReleaseAll(up);
  int ok = 0;
  for (auto& f : out) {
    http::Response r = f.get();
    if (r.status == 200) {
      ++ok;
      continue;
    }
    EXPECT_EQ(r.status, 429) << r.body;
    EXPECT_EQ(r.headers.Find("x-should-retry"), "false");
  }
  std::printf("burst: %d of %d admitted, %d answered 200\n", admitted, kBurst, ok);
  EXPECT_EQ(ok, admitted);
  EXPECT_GE(admitted, 1);
  // Billed: 2,100 * 100 + 4,000 * 150 = 810,000 nano-USD per admitted request.
  EXPECT_LE(admitted * 810'000, kTwoTenthsOfACent);
  EXPECT_NEAR(Metric("kinference_cost_usd_total{"), admitted * 810'000e-9, 1e-12);
}

// Item 3: the reservation was at the model's dearest endpoint, so a budget that pays
// for the cheap pool the router picks refused every request. Pool "dear" reports a long
// queue, so least-load picks "cheap"; the budget fits one worst case at cheap's price
// (3 * 100 + 16 * 400 = 6,700 nano-USD) but not at dear's (3 * 10,000 + 16 * 40,000).
TEST_F(BudgetTest, ReservesAtThePickedEndpointsPriceNotTheDearestOne) {
  auto& cheap = AddUpstream(3, 16, /*hold=*/false);
  auto& dear = AddUpstream(3, 16, /*hold=*/false, /*waiting=*/100);
  GatewayConfig c = Config({{"cheap", cheap.port(), 100, 400}, {"dear", dear.port(), 10000, 40000}},
                           {.spend_per_day = 100'000});
  c.strategy = "least-load";
  Start(c);
  ASSERT_TRUE(Eventually([&] {  // dear's queue scraped
    auto eps = json::parse(Call("GET", "/debug/endpoints").body).at("endpoints").as_array();
    for (const auto& e : eps)
      if (e.at("pool") == "dear" && e.at("metrics").is_object()) return true;
    return false;
  }));
  const std::string chat =
      R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hello"}]})";
  for (int i = 0; i < 5; ++i) {
    auto r = Post(chat);
    EXPECT_EQ(r.status, 200) << r.body;
  }
  EXPECT_EQ(cheap.requests(), 5);
  EXPECT_EQ(dear.requests(), 0);
}

// Item 3: a retry on an endpoint at another price reserves at that price. Request A
// (max_tokens 100) goes first to "dear" (least-load: "cheap" reports a long queue), which
// answers 500, and is retried on "cheap", which holds it; B (max_tokens 1) comes while A
// is held. A's worst case is 4,030,000 nano-USD at dear's price, 40,300 at cheap's; B's
// 70,000 at dear's, 700 at cheap's. The budget, 4,030,350, fits B beside A only if A holds
// cheap's price: before, A held dear's (the dearest endpoint) to the end and B was
// refused.
TEST_F(BudgetTest, RetryOnAnEndpointAtAnotherPriceReservesAtThatPrice) {
  auto& cheap = AddUpstream(3, 1, /*hold=*/true, /*waiting=*/100);
  fakes_.push_back(std::make_unique<testing::FakeUpstream>(io(), testing::FakeMode::kFail500));
  testing::FakeUpstream* dear = fakes_.back().get();
  OnStop([dear] { dear->Stop(); });
  GatewayConfig c =
      Config({{"cheap", cheap.port(), 100, 400}, {"dear", dear->port(), 10000, 40000}},
             {.spend_per_day = 4'030'350});
  c.strategy = "least-load";
  Start(c);
  ASSERT_TRUE(Eventually([&] {  // cheap's queue scraped
    auto eps = json::parse(Call("GET", "/debug/endpoints").body).at("endpoints").as_array();
    for (const auto& e : eps)
      if (e.at("pool") == "cheap" && e.at("metrics").is_object()) return true;
    return false;
  }));
  auto chat = [](int max_tokens) {
    return R"({"model":"m","max_tokens":)" + std::to_string(max_tokens) +
           R"(,"messages":[{"role":"user","content":"hello"}]})";
  };
  auto a = std::async(std::launch::async, [&] { return Post(chat(100)); });
  ASSERT_TRUE(Eventually([&] { return cheap.requests() == 1; }));
  EXPECT_EQ(dear->requests(), 1);  // A was tried there first
  auto b = std::async(std::launch::async, [&] { return Post(chat(1)); });
  ASSERT_TRUE(Eventually([&] {
    return cheap.requests() == 2 ||
           b.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }));
  ReleaseAll(cheap);
  http::Response ra = a.get(), rb = b.get();
  EXPECT_EQ(ra.status, 200) << ra.body;
  EXPECT_EQ(rb.status, 200) << rb.body;
}

}  // namespace
}  // namespace kinference::gateway
