#include "engine/metrics.h"

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace kinference::engine {
namespace {

TEST(Histogram, BucketsAreInclusiveUpperBounds) {
  Histogram h({0.1, 1.0});
  h.Observe(0.1);
  h.Observe(0.5);
  h.Observe(5.0);
  EXPECT_EQ(h.counts, (std::vector<uint64_t>{1, 1, 1}));
  EXPECT_EQ(h.count, 3u);
  EXPECT_DOUBLE_EQ(h.sum, 5.6);
}

TEST(EngineMetricsTest, UsesVllmBucketBounds) {
  EngineMetrics m;
  ASSERT_EQ(m.time_to_first_token_seconds.bounds.size(), 22u);
  EXPECT_EQ(m.time_to_first_token_seconds.bounds.front(), 0.001);
  EXPECT_EQ(m.time_to_first_token_seconds.bounds.back(), 2560.0);
  ASSERT_EQ(m.inter_token_latency_seconds.bounds.size(), 19u);
  EXPECT_EQ(m.inter_token_latency_seconds.bounds.back(), 80.0);
  ASSERT_EQ(m.e2e_request_latency_seconds.bounds.size(), 21u);
  EXPECT_EQ(m.request_queue_time_seconds.bounds.back(), 7680.0);
}

bool Contains(const std::string& s, const std::string& sub) {
  return s.find(sub) != std::string::npos;
}

TEST(RenderPrometheusTest, HasVllmNamesLabelsAndTypes) {
  auto p = *ProfileByName("l40s-27b-fp8");
  Engine e(p);
  ASSERT_TRUE(e.AddRequest(testing::Req("a", testing::Tokens(1, 100), 3)).ok());
  testing::RunToIdle(e, 0);
  std::string text = RenderPrometheus(e.metrics(), p, p.model_name, "0");
  const std::string labels = "{model_name=\"google/gemma-3-27b-it\",engine=\"0\"";
  for (const char* name :
       {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
        "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:num_preemptions_total",
        "vllm:request_success_total"}) {
    EXPECT_TRUE(Contains(text, std::string("# HELP ") + name + " ")) << name;
    EXPECT_TRUE(Contains(text, std::string("\n") + name + labels)) << name;
  }
  // One request of 3 tokens: one TTFT, e2e and queue observation, two inter-token gaps.
  for (auto [name, n] : std::vector<std::pair<std::string, std::string>>{
           {"vllm:time_to_first_token_seconds", "1.0"},
           {"vllm:inter_token_latency_seconds", "2.0"},
           {"vllm:e2e_request_latency_seconds", "1.0"},
           {"vllm:request_queue_time_seconds", "1.0"}}) {
    EXPECT_TRUE(Contains(text, "# TYPE " + name + " histogram")) << name;
    EXPECT_TRUE(Contains(text, name + "_bucket" + labels + ",le=\"+Inf\"} " + n)) << name;
    EXPECT_TRUE(Contains(text, name + "_count" + labels + "} " + n)) << name;
  }
  EXPECT_TRUE(Contains(text, "# TYPE vllm:prompt_tokens_total counter"));
  EXPECT_TRUE(Contains(text, "# TYPE vllm:num_requests_running gauge"));
  EXPECT_TRUE(Contains(text, "vllm:prompt_tokens_total" + labels + "} 100.0\n"));
  EXPECT_TRUE(Contains(text, "vllm:generation_tokens_total" + labels + "} 3.0\n"));
  EXPECT_TRUE(
      Contains(text, "vllm:request_success_total" + labels + ",finished_reason=\"length\"} 1.0\n"));
  EXPECT_TRUE(
      Contains(text, "vllm:time_to_first_token_seconds_bucket" + labels + ",le=\"0.001\"} 0.0\n"));
  // As vLLM writes it: no model_name label on the info gauge.
  EXPECT_TRUE(Contains(text,
                       "vllm:cache_config_info{block_size=\"16\",enable_prefix_caching=\"True\","
                       "engine=\"0\",num_gpu_blocks=\"9155\"} 1.0\n"));
  // Counters and histograms have their _created gauge (0 here: created_unix_s unset).
  EXPECT_TRUE(Contains(text, "# TYPE vllm:prompt_tokens_created gauge\n"));
  EXPECT_TRUE(Contains(text, "vllm:prompt_tokens_created" + labels + "} 0.0\n"));
  EXPECT_TRUE(Contains(text, "vllm:time_to_first_token_seconds_created" + labels + "} 0.0\n"));
  EXPECT_TRUE(Contains(text, "vllm:prompt_tokens_cached_total" + labels + "} 0.0\n"));
}

}  // namespace
}  // namespace kinference::engine
