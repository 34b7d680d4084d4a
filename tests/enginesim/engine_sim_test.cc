// engine-sim over HTTP: whole responses, errors in vLLM's shape, models, health, metrics.
#include "common/tokenizer.h"
#include "engine_sim_fixture.h"

namespace kinference::enginesim {
namespace {

TEST_F(EngineSimTest, CompletionShape) {
  std::string prompt = SyntheticText(11, 40);
  auto r = Fetch("POST", "/v1/completions",
                 R"({"model":")" + std::string(kModel) + R"(","prompt":")" + prompt +
                     R"(","max_tokens":4,"ignore_eos":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.Find("content-type"), "application/json");
  auto j = Json(r.body).as_object();
  EXPECT_TRUE(j.at("id").as_string().starts_with("cmpl-"));
  EXPECT_EQ(j.at("object").as_string(), "text_completion");
  EXPECT_EQ(j.at("model").as_string(), kModel);
  EXPECT_TRUE(j.at("created").is_int64());
  const auto& c = j.at("choices").at(0);
  EXPECT_EQ(c.at("index").as_int64(), 0);
  EXPECT_EQ(CountTokens(c.at("text").as_string()), 4u);
  EXPECT_EQ(c.at("finish_reason").as_string(), "length");
  EXPECT_TRUE(c.at("logprobs").is_null());
  const auto& u = j.at("usage");
  EXPECT_EQ(u.at("prompt_tokens").as_int64(), 40);
  EXPECT_EQ(u.at("completion_tokens").as_int64(), 4);
  EXPECT_EQ(u.at("total_tokens").as_int64(), 44);
  EXPECT_EQ(u.at("prompt_tokens_details").at("cached_tokens").as_int64(), 0);
}

TEST_F(EngineSimTest, CompletionDefaultsTo16TokensAndAcceptsTokenIds) {
  auto r = Fetch("POST", "/v1/completions", R"({"prompt":[1,2,3,4,5],"ignore_eos":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto u = Json(r.body).at("usage");
  EXPECT_EQ(u.at("prompt_tokens").as_int64(), 5);
  EXPECT_EQ(u.at("completion_tokens").as_int64(), 16);
}

TEST_F(EngineSimTest, SeededRequestsAreReproducible) {
  std::string body = R"({"prompt":" a b c","max_tokens":50,"seed":7})";
  auto a = Json(Fetch("POST", "/v1/completions", body).body);
  auto b = Json(Fetch("POST", "/v1/completions", body).body);
  EXPECT_EQ(a.at("choices").at(0).at("text"), b.at("choices").at(0).at("text"));
  EXPECT_EQ(a.at("choices").at(0).at("finish_reason"), b.at("choices").at(0).at("finish_reason"));
}

TEST_F(EngineSimTest, ChatShape) {
  auto r = Fetch("POST", "/v1/chat/completions",
                 R"({"model":")" + std::string(kModel) +
                     R"(","messages":[{"role":"system","content":"be brief"},
                     {"role":"user","content":[{"type":"text","text":"hello"}]}],
                     "max_completion_tokens":3,"ignore_eos":true,"temperature":0})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = Json(r.body).as_object();
  EXPECT_TRUE(j.at("id").as_string().starts_with("chatcmpl-"));
  EXPECT_EQ(j.at("object").as_string(), "chat.completion");
  const auto& c = j.at("choices").at(0);
  EXPECT_EQ(c.at("message").at("role").as_string(), "assistant");
  EXPECT_EQ(CountTokens(c.at("message").at("content").as_string()), 3u);
  EXPECT_EQ(c.at("finish_reason").as_string(), "length");
  EXPECT_EQ(j.at("usage").at("completion_tokens").as_int64(), 3);
}

TEST_F(EngineSimTest, RepeatedLongPromptHitsPrefixCache) {
  std::string body =
      R"({"prompt":")" + SyntheticText(424242, 2000) + R"(","max_tokens":1,"ignore_eos":true})";
  auto first = Json(Fetch("POST", "/v1/completions", body).body).at("usage");
  auto second = Json(Fetch("POST", "/v1/completions", body).body).at("usage");
  EXPECT_EQ(first.at("prompt_tokens").as_int64(), 2000);
  EXPECT_EQ(first.at("prompt_tokens_details").at("cached_tokens").as_int64(), 0);
  int64_t cached = second.at("prompt_tokens_details").at("cached_tokens").as_int64();
  // Whole 16-token blocks are reused; vLLM always recomputes at least the last token.
  EXPECT_GE(cached, 2000 - 16);
  EXPECT_LT(cached, 2000);
  EXPECT_EQ(cached % 16, 0);
  // The first request wrote its 125 full blocks to the cache, the second none.
  EXPECT_TRUE(first.at("prompt_tokens_details").at("created_cache_tokens").is_null());
  auto chat = [&](int words) {
    return Json(Fetch("POST", "/v1/chat/completions",
                      R"({"messages":[{"role":"user","content":")" + SyntheticText(77, words) +
                          R"("}],"max_tokens":1,"ignore_eos":true})")
                    .body)
        .at("usage")
        .at("prompt_tokens_details");
  };
  // 1,001 words + 8 ChatML tokens = 1,009 prompt tokens: 63 full blocks of 16.
  auto a = chat(1001);
  EXPECT_EQ(a.at("created_cache_tokens").as_int64(), 1008);
  EXPECT_EQ(a.at("cached_tokens").as_int64(), 0);
  auto b = chat(1001);
  EXPECT_EQ(b.at("created_cache_tokens").as_int64(), 0);
  EXPECT_EQ(b.at("cached_tokens").as_int64(), 1008);
}

TEST_F(EngineSimTest, MalformedJsonIs400) {
  auto r = Fetch("POST", "/v1/chat/completions", R"({"messages": [)");
  EXPECT_EQ(r.status, 400);
  auto e = Json(r.body).at("error");
  // vLLM (FastAPI) names a body it cannot decode "Bad Request", at location "body...".
  EXPECT_EQ(e.at("type").as_string(), "Bad Request");
  EXPECT_EQ(e.at("param").as_string(), "body");
  EXPECT_EQ(e.at("code").as_int64(), 400);
  EXPECT_TRUE(e.at("message").is_string());
}

TEST_F(EngineSimTest, ValidationErrorsAre400WithParam) {
  auto r = Fetch("POST", "/v1/completions", R"({"prompt":"x","max_tokens":-1})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(Json(r.body).at("error").at("param").as_string(), "max_tokens");
  r = Fetch("POST", "/v1/completions", R"({"prompt":[1,2,3],"max_tokens":131070})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(Json(r.body).at("error").at("message").as_string().find("maximum context length"),
            std::string::npos);
}

TEST_F(EngineSimTest, UnknownModelIs404) {
  auto r = Fetch("POST", "/v1/completions", R"({"model":"gpt-4","prompt":"x"})");
  EXPECT_EQ(r.status, 404);
  auto e = Json(r.body).at("error");
  EXPECT_EQ(e.at("message").as_string(), "The model `gpt-4` does not exist.");
  EXPECT_EQ(e.at("type").as_string(), "NotFoundError");
  EXPECT_EQ(e.at("param").as_string(), "model");
  EXPECT_EQ(e.at("code").as_int64(), 404);
}

TEST_F(EngineSimTest, OversizedBodyIs413) {
  std::string body = R"({"prompt":")" + std::string(300 * 1024, 'a') + R"("})";
  auto r = Fetch("POST", "/v1/completions", body);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(Json(r.body).at("error").at("code").as_int64(), 413);
}

TEST_F(EngineSimTest, UnknownPathAndWrongMethod) {
  EXPECT_EQ(Fetch("GET", "/v2/nothing").status, 404);
  EXPECT_EQ(Fetch("GET", "/v1/completions").status, 405);
}

TEST_F(EngineSimTest, ModelsAndHealth) {
  auto m = Fetch("GET", "/v1/models");
  ASSERT_EQ(m.status, 200);
  auto j = Json(m.body);
  EXPECT_EQ(j.at("object").as_string(), "list");
  const auto& d = j.at("data").at(0);
  EXPECT_EQ(d.at("id").as_string(), kModel);
  EXPECT_EQ(d.at("object").as_string(), "model");
  EXPECT_EQ(d.at("owned_by").as_string(), "vllm");
  EXPECT_EQ(d.at("max_model_len").as_int64(), 131072);
  auto h = Fetch("GET", "/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.body, "");
}

TEST_F(EngineSimTest, MetricsUseVllmNames) {
  const std::string labels = R"({model_name=")" + std::string(kModel) + R"(",engine="0"})";
  auto before = Metric(Fetch("GET", "/metrics").body, "vllm:generation_tokens_total" + labels);
  ASSERT_TRUE(before.has_value());
  Fetch("POST", "/v1/completions", R"({"prompt":" p q","max_tokens":2,"ignore_eos":true})");
  auto m = Fetch("GET", "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.headers.Find("content-type"), "text/plain; version=1.0.0; charset=utf-8");
  for (const char* name :
       {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
        "vllm:prompt_tokens_total", "vllm:generation_tokens_total"}) {
    EXPECT_NE(m.body.find(std::string(name) + labels), std::string::npos) << name;
  }
  for (const char* name :
       {"vllm:time_to_first_token_seconds_bucket", "vllm:e2e_request_latency_seconds_count",
        "vllm:request_success_total", "vllm:cache_config_info"}) {
    EXPECT_NE(m.body.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(Metric(m.body, "vllm:generation_tokens_total" + labels), *before + 2.0);
  EXPECT_EQ(Metric(m.body, "vllm:num_requests_running" + labels), 0.0);
  EXPECT_TRUE(Metric(m.body, "vllm:prompt_tokens_cached_total" + labels).has_value());
  // Counters and histograms carry prometheus_client's _created gauge (Unix seconds).
  for (const char* name : {"vllm:generation_tokens_created", "vllm:prompt_tokens_cached_created",
                           "vllm:time_to_first_token_seconds_created"}) {
    auto created = Metric(m.body, name + labels);
    ASSERT_TRUE(created.has_value()) << name;
    EXPECT_GT(*created, 1.7e9) << name;
  }
  EXPECT_NE(m.body.find("# TYPE vllm:generation_tokens_created gauge"), std::string::npos);
}

TEST_F(EngineSimTest, VersionTokenizeAndKvEventSources) {
  auto v = Fetch("GET", "/version");
  ASSERT_EQ(v.status, 200);
  EXPECT_EQ(Json(v.body).at("version").as_string(), "0.32.0");
  auto t = Fetch("POST", "/tokenize", R"({"prompt":" one two three","return_token_strs":true})");
  ASSERT_EQ(t.status, 200) << t.body;
  auto j = Json(t.body);
  EXPECT_EQ(j.at("count").as_int64(), 3);
  EXPECT_EQ(j.at("max_model_len").as_int64(), 131072);
  EXPECT_EQ(j.at("tokens").as_array().size(), 3u);
  EXPECT_EQ(j.at("token_strs"), Json(R"([" one"," two"," three"])"));
  // Chat form: the ChatML rendering with the generation prompt, as a chat request sees it.
  auto c =
      Json(Fetch("POST", "/tokenize", R"({"messages":[{"role":"user","content":"hi"}]})").body);
  EXPECT_TRUE(c.at("token_strs").is_null());
  auto gen = Json(Fetch("POST", "/v1/chat/completions",
                        R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1})")
                      .body);
  EXPECT_EQ(c.at("count"), gen.at("usage").at("prompt_tokens"));
  EXPECT_EQ(Fetch("POST", "/tokenize", R"({"model":"other","prompt":"x"})").status, 404);
  EXPECT_EQ(Fetch("POST", "/tokenize", R"({"add_special_tokens":true})").status, 400);
  auto k = Fetch("GET", "/kv_event_sources");
  EXPECT_EQ(k.status, 200);
  EXPECT_EQ(Json(k.body), Json("{}"));  // engine-sim publishes no KV events
}

}  // namespace
}  // namespace kinference::enginesim
