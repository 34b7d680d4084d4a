// Prometheus text exposition as scraped from a vLLM /metrics endpoint (routing core's
// parser): any bytes either parse or give an error, for any model filter.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "routing/metrics_snapshot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto any = kinference::routing::ParsePrometheusText(text);
  auto one = kinference::routing::ParsePrometheusText(text, "meta-llama/Llama-3.1-8B-Instruct");
  if (!any.ok() && any.status().code() != kinference::ErrorCode::kInvalidArgument) {
    __builtin_trap();
  }
  (void)one;
  return 0;
}
