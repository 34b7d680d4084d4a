// HTTP load generator for front-to-front overhead benchmarks (`kinference bench http`,
// scripts/bench_gateway.sh): the same request, over and over, on N keep-alive connections
// in a closed loop, timing each response's first body byte and its end.
//
// Unlike the workload driver (bench/driver.h) it knows nothing of OpenAI: the body is
// sent as given, the response is read as bytes (chunked decoding by Boost.Beast), and a
// response counts as an error when its status is not 2xx, the connection fails, or it
// does not end within the timeout. Each connection sends its next request as soon as the
// previous response ended (closed loop), so requests/s at N connections measures a
// front's capacity at that concurrency and latency at N = 1 its added delay.
//
// Times are wall-clock microseconds from the request's first byte written to:
//   first_byte: the first response body byte (for SSE, the first event);
//   total:      the last body byte.
// A connection the server closes is reopened (counted in `reconnects`); with
// new_connection_per_request every request opens its own (and the connect time counts).
//
// Thread-safety: RunHttpLoad blocks the calling thread and runs one io_context on it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace kinference::bench {

struct HttpLoadOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string method = "POST";
  std::string path = "/v1/chat/completions";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Type is added
  size_t connections = 1;
  size_t requests = 1000;  // measured requests over all connections
  size_t warmup = 0;       // requests before measuring (not in the results)
  double timeout_s = 30;   // per request, connect included
  bool new_connection_per_request = false;
};

struct LatencyStats {
  double p50_us = 0, p90_us = 0, p99_us = 0, mean_us = 0, max_us = 0;
};

struct HttpLoadResult {
  size_t requests = 0;  // measured, successful
  size_t errors = 0;
  std::string first_error;
  size_t reconnects = 0;
  double duration_s = 0;  // first measured send to last measured end
  double requests_per_s = 0;
  LatencyStats first_byte;
  LatencyStats total;
};

// kInvalidArgument for zero connections or requests; single request failures are counted
// in the result, not returned.
Result<HttpLoadResult> RunHttpLoad(const HttpLoadOptions& options);

// p50/p90/p99 (nearest rank), mean and max of `samples_us` (which it sorts); zeros when empty.
LatencyStats Summarize(std::vector<double>& samples_us);

}  // namespace kinference::bench
