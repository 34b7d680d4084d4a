#include "routing/metrics_snapshot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

namespace kinference::routing {
namespace {

// Shaped like a vLLM V1 /metrics page (names and labels from vllm/v1/metrics/loggers.py).
constexpr std::string_view kVllmText =
    R"(# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="llama"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="llama"} 7.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="llama"} 0.42
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="llama"} 12000.0
vllm:prefix_cache_hits_total{engine="0",model_name="llama"} 3000.0
vllm:prompt_tokens_total{engine="0",model_name="llama"} 12000.0
vllm:generation_tokens_total{engine="0",model_name="llama"} 4500.0
vllm:num_preemptions_total{engine="0",model_name="llama"} 2.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="llama"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="llama"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="llama"} 12.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="llama"} 12.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="llama"} 3.25
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",num_gpu_blocks="27000"} 1.0
vllm:request_success_total{engine="0",finished_reason="stop",model_name="llama"} 12.0
python_gc_objects_collected_total{generation="0"} 1234.0
)";

TEST(ParsePrometheusText, ReadsVllmV1Series) {
  auto r = ParsePrometheusText(kVllmText);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->num_requests_running, 3.0);
  EXPECT_EQ(r->num_requests_waiting, 7.0);
  EXPECT_DOUBLE_EQ(*r->kv_cache_usage_perc, 0.42);
  EXPECT_EQ(r->prefix_cache_queries_total, 12000.0);
  EXPECT_EQ(r->prefix_cache_hits_total, 3000.0);
  EXPECT_EQ(r->prompt_tokens_total, 12000.0);
  EXPECT_EQ(r->generation_tokens_total, 4500.0);
  EXPECT_EQ(r->num_preemptions_total, 2.0);
  EXPECT_EQ(r->ttft_seconds_count, 12.0);
  EXPECT_DOUBLE_EQ(*r->ttft_seconds_sum, 3.25);
  EXPECT_EQ(r->block_size, 16);
  EXPECT_EQ(r->num_gpu_blocks, 27000);
}

TEST(ParsePrometheusText, MissingSeriesStayUnset) {
  auto r = ParsePrometheusText("vllm:num_requests_running 1\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->num_requests_running, 1.0);
  EXPECT_FALSE(r->num_requests_waiting.has_value());
  EXPECT_FALSE(r->block_size.has_value());
}

TEST(ParsePrometheusText, FiltersByModelNameAndSumsOtherwise) {
  std::string text =
      "vllm:num_requests_waiting{model_name=\"a\"} 2\n"
      "vllm:num_requests_waiting{model_name=\"b\"} 5\n"
      "vllm:kv_cache_usage_perc{model_name=\"a\"} 0.2\n"
      "vllm:kv_cache_usage_perc{model_name=\"b\"} 0.6\n";
  auto all = ParsePrometheusText(text);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->num_requests_waiting, 7.0);
  EXPECT_DOUBLE_EQ(*all->kv_cache_usage_perc, 0.4);  // a fraction is averaged
  auto b = ParsePrometheusText(text, "b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->num_requests_waiting, 5.0);
  EXPECT_DOUBLE_EQ(*b->kv_cache_usage_perc, 0.6);
  auto none = ParsePrometheusText(text, "c");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->num_requests_waiting.has_value());
}

TEST(ParsePrometheusText, EscapedLabelsSpecialValuesAndTimestamps) {
  std::string text =
      "# a free comment\n"
      "\n"
      "vllm:num_requests_waiting{model_name=\"m \\\"q\\\" \\\\ x\\n\",x=\"}\"} 4 1700000000000\n"
      "vllm:num_requests_running{model_name=\"m \\\"q\\\" \\\\ x\\n\"} +Inf\n"
      "vllm:kv_cache_usage_perc NaN\r\n"
      "vllm:num_preemptions_total{} 1e3\n";
  auto r = ParsePrometheusText(text, "m \"q\" \\ x\n");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->num_requests_waiting, 4.0);
  EXPECT_TRUE(std::isinf(*r->num_requests_running));
  EXPECT_TRUE(std::isnan(*r->kv_cache_usage_perc));
  EXPECT_EQ(r->num_preemptions_total, 1000.0);
}

TEST(ParsePrometheusText, MalformedLinesAreInvalidArgument) {
  for (std::string bad :
       {"vllm:num_requests_running{model_name=\"a\" 1\n", "vllm:num_requests_running abc\n",
        "vllm:num_requests_running\n", "vllm:num_requests_running{model_name=\"a} 1\n",
        "vllm:num_requests_running 1 2 3\n", "9bad 1\n", "vllm:x{a=\"\\q\"} 1\n"}) {
    auto r = ParsePrometheusText("vllm:num_requests_waiting 1\n" + bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("line 2"), std::string::npos);
  }
}

}  // namespace
}  // namespace kinference::routing

namespace kinference::routing {
namespace {

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(KINFERENCE_TESTDATA_DIR) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A page captured from real vLLM 0.32.0 (CPU build, scripts/vllm-serve.sh, tiny model served
// as tiny-qwen2) while one 6,000-token prompt decoded after two earlier copies of it: block
// size 128 (the CPU default), 16,384 blocks (1 GiB), kv_cache_usage_perc a fraction,
// counters with _created samples, info labels the parser does not know.
TEST(ParsePrometheusText, ReadsARealVllmCpuPage) {
  std::string text = ReadTestdata("vllm-0.32.0-cpu-metrics.txt");
  ASSERT_FALSE(text.empty());
  auto r = ParsePrometheusText(text, "tiny-qwen2");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const MetricsSnapshot& m = *r;
  EXPECT_EQ(m.block_size, 128);
  EXPECT_EQ(m.num_gpu_blocks, 16384);
  ASSERT_TRUE(m.kv_cache_usage_perc);
  // 48 blocks of 16,384 in use: a fraction, not a percentage.
  EXPECT_NEAR(*m.kv_cache_usage_perc, 48.0 / 16384, 1e-6);
  EXPECT_EQ(m.num_requests_running, 1.0);
  EXPECT_EQ(m.num_requests_waiting, 0.0);
  EXPECT_EQ(m.prefix_cache_hits_total, 11776.0);
  EXPECT_EQ(m.prompt_tokens_total, 18001.0);
  EXPECT_TRUE(m.ttft_seconds_count);
  // Another model's name filters everything labelled with model_name out.
  auto other = ParsePrometheusText(text, "other-model");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->num_requests_running);
  EXPECT_EQ(other->block_size, 128);  // cache_config_info carries no model_name
}

}  // namespace
}  // namespace kinference::routing
