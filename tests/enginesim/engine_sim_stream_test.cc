// engine-sim streaming: SSE framing as vLLM sends it, and abort on client disconnect.
#include <unistd.h>

#include "common/tokenizer.h"
#include "engine_sim_fixture.h"

namespace kinference::enginesim {
namespace {

TEST_F(EngineSimTest, ChatStreamFraming) {
  auto s = PostStream("/v1/chat/completions",
                      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":5,
                          "ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_TRUE(s.done.ok()) << s.done.message();
  EXPECT_EQ(s.status, 200);
  EXPECT_TRUE(s.content_type.starts_with("text/event-stream"));
  // role chunk, 5 content chunks, usage chunk, [DONE]
  ASSERT_EQ(s.events.size(), 8u);
  EXPECT_EQ(s.events.back().data, "[DONE]");
  std::string id;
  for (size_t i = 0; i + 1 < s.events.size(); ++i) {
    auto j = Json(s.events[i].data);
    EXPECT_EQ(j.at("object").as_string(), "chat.completion.chunk");
    if (i == 0) id = j.at("id").as_string();
    EXPECT_EQ(j.at("id").as_string(), id);
  }
  EXPECT_TRUE(id.starts_with("chatcmpl-"));
  auto role = Json(s.events[0].data).at("choices").at(0);
  EXPECT_EQ(role.at("delta").at("role").as_string(), "assistant");
  EXPECT_EQ(role.at("delta").at("content").as_string(), "");
  for (size_t i = 1; i <= 5; ++i) {
    auto c = Json(s.events[i].data).at("choices").at(0);
    EXPECT_FALSE(c.at("delta").at("content").as_string().empty());
    if (i < 5) {
      EXPECT_TRUE(c.at("finish_reason").is_null());
    } else {
      EXPECT_EQ(c.at("finish_reason").as_string(), "length");
    }
  }
  auto usage = Json(s.events[6].data);
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  EXPECT_EQ(usage.at("usage").at("completion_tokens").as_int64(), 5);
  EXPECT_TRUE(usage.at("usage").at("prompt_tokens_details").at("cached_tokens").is_int64());
}

// stream_options.continuous_usage_stats as vLLM serves it: with include_usage every chunk
// carries the usage so far, the role chunk the prompt's tokens and 0 completion tokens.
TEST_F(EngineSimTest, ChatStreamWithContinuousUsageStats) {
  auto s = PostStream("/v1/chat/completions",
                      R"({"messages":[{"role":"user","content":"hi there"}],"max_tokens":3,
                          "ignore_eos":true,"stream":true,
                          "stream_options":{"include_usage":true,"continuous_usage_stats":true}})");
  ASSERT_TRUE(s.done.ok()) << s.done.message();
  ASSERT_EQ(s.events.size(), 6u);  // role, 3 tokens, usage, [DONE]
  const int64_t prompt =
      Json(s.events[4].data).at("usage").at("prompt_tokens").as_int64();  // the final usage
  EXPECT_GT(prompt, 0);
  for (size_t i = 0; i < 4; ++i) {
    auto usage = Json(s.events[i].data).at("usage");
    EXPECT_EQ(usage.at("prompt_tokens").as_int64(), prompt) << i;
    EXPECT_EQ(usage.at("completion_tokens").as_int64(), static_cast<int64_t>(i)) << i;
    EXPECT_EQ(usage.at("total_tokens").as_int64(), prompt + static_cast<int64_t>(i)) << i;
  }
  // Without include_usage it has no effect (vLLM: continuous usage needs include_usage).
  auto plain = PostStream("/v1/chat/completions",
                          R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2,
                              "ignore_eos":true,"stream":true,
                              "stream_options":{"continuous_usage_stats":true}})");
  ASSERT_TRUE(plain.done.ok());
  EXPECT_FALSE(Json(plain.events[0].data).as_object().contains("usage"));
}

TEST_F(EngineSimTest, CompletionStreamWithoutUsage) {
  auto s = PostStream("/v1/completions",
                      R"({"prompt":" x y z","max_tokens":3,"ignore_eos":true,"stream":true})");
  ASSERT_TRUE(s.done.ok()) << s.done.message();
  ASSERT_EQ(s.events.size(), 4u);  // 3 tokens, [DONE]
  EXPECT_EQ(s.events.back().data, "[DONE]");
  for (size_t i = 0; i < 3; ++i) {
    auto j = Json(s.events[i].data);
    EXPECT_EQ(j.at("object").as_string(), "text_completion");
    EXPECT_FALSE(j.as_object().contains("usage"));
    auto c = j.at("choices").at(0);
    EXPECT_FALSE(c.at("text").as_string().empty());
    EXPECT_EQ(c.at("finish_reason").is_null(), i < 2);
  }
}

TEST_F(EngineSimTest, StreamStoppingAtEosEndsWithStop) {
  // Without ignore_eos the engine samples an EOS position; finish_reason says which.
  auto s = PostStream("/v1/completions",
                      R"({"prompt":" x","max_tokens":40,"seed":3,"stream":true,
                          "stream_options":{"include_usage":true}})");
  ASSERT_TRUE(s.done.ok());
  ASSERT_GE(s.events.size(), 3u);
  auto usage = Json(s.events[s.events.size() - 2].data).at("usage");
  int64_t n = usage.at("completion_tokens").as_int64();
  auto last = Json(s.events[s.events.size() - 3].data).at("choices").at(0);
  EXPECT_EQ(last.at("finish_reason").as_string(), n < 40 ? "stop" : "length");
  EXPECT_EQ(static_cast<int64_t>(s.events.size()), n + 2);
}

TEST_F(EngineSimTest, ConcurrentStreamsAllComplete) {
  boost::asio::io_context io;
  constexpr int kStreams = 8;
  std::vector<api::SseParser> parsers(kStreams);
  std::vector<int> tokens(kStreams, 0), done_events(kStreams, 0), ok(kStreams, 0);
  for (int i = 0; i < kStreams; ++i) {
    http::ClientCallbacks cb;
    cb.on_data = [&, i](std::string_view d) {
      parsers[i].Feed(d, [&, i](const api::SseEvent& e) {
        if (e.data == "[DONE]") {
          ++done_events[i];
        } else {
          ++tokens[i];
        }
      });
    };
    cb.on_complete = [&, i](Status st) { ok[i] = st.ok(); };
    std::string body = R"({"prompt":")" + SyntheticText(100 + i, 300) + R"(","max_tokens":)" +
                       std::to_string(10 + i) + R"(,"ignore_eos":true,"stream":true})";
    http::StartCall(io.get_executor(), Req("POST", "/v1/completions", body), cb);
  }
  io.run();
  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(ok[i]);
    EXPECT_EQ(tokens[i], 10 + i);
    EXPECT_EQ(done_events[i], 1);
  }
}

TEST_F(EngineSimTest, ClientDisconnectAbortsTheRequest) {
  const std::string labels = R"({model_name=")" + std::string(kModel) + R"(",engine="0"})";
  // A long generation (100k tokens: minutes of model time) cancelled after 3 chunks.
  auto s =
      PostStream("/v1/completions",
                 R"({"prompt":" long","max_tokens":100000,"ignore_eos":true,"stream":true})", 3);
  EXPECT_EQ(s.done.code(), ErrorCode::kCancelled);
  EXPECT_EQ(s.events.size(), 3u);
  // The engine reports the abort once it has processed it (bounded poll, hang guard).
  std::string text;
  for (int i = 0; i < 2000; ++i) {
    text = Fetch("GET", "/metrics").body;
    auto aborted = Metric(text, "vllm:request_success_total" + labels.substr(0, labels.size() - 1) +
                                    R"(,finished_reason="abort"})");
    if (aborted && *aborted >= 1) break;
    usleep(5000);
  }
  EXPECT_EQ(Metric(text, "vllm:request_success_total" + labels.substr(0, labels.size() - 1) +
                             R"(,finished_reason="abort"})"),
            1.0)
      << text;
  EXPECT_EQ(Metric(text, "vllm:num_requests_running" + labels), 0.0) << text;
  EXPECT_EQ(Metric(text, "vllm:num_requests_waiting" + labels), 0.0);
  auto gen = Metric(text, "vllm:generation_tokens_total" + labels);
  ASSERT_TRUE(gen.has_value());
  EXPECT_LT(*gen, 100000);
  // The engine keeps serving.
  auto r =
      Fetch("POST", "/v1/completions", R"({"prompt":" after","max_tokens":2,"ignore_eos":true})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Json(r.body).at("usage").at("completion_tokens").as_int64(), 2);
}

}  // namespace
}  // namespace kinference::enginesim
