// Runner: the event loop behind sim/simulation.h, private to src/sim. simulation.cc holds
// the loop, the client and the gateway; replicas.cc the engines, scrapes and cluster
// dynamics (join, leave, restart).
//
// Thread-safety: not thread-safe; one Runner per Simulate() call.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/engine.h"
#include "engine/metrics.h"
#include "kv/block_hash.h"
#include "routing/metrics_snapshot.h"
#include "routing/router.h"
#include "sim/event_queue.h"
#include "sim/simulation.h"
#include "workload/workload.h"

namespace kinference::sim::internal {

// One replica: its engine (null while down) and the simulator's bookkeeping about it.
struct Replica {
  ReplicaSpec spec;
  std::unique_ptr<engine::Engine> engine;
  uint64_t epoch = 0;  // bumped at each restart: stale step/wake events are dropped
  bool busy = false;   // a step is planned
  bool up = false;     // serving (joined, not restarting)
  bool in_router = false;
  double next_wake = kNever;
  std::unordered_set<size_t> on_engine;  // requests added and not finished
  // The last scrape: an engine whose metrics did not change renders the same text, which
  // parses to the same snapshot, so it is reused instead of rendered and parsed again.
  std::optional<engine::EngineMetrics> last_metrics;
  routing::MetricsSnapshot last_snapshot;
  uint64_t kv_seq = 0;  // next KV-event batch sequence number (0 again after a restart)
};

// A KV-event batch on its way to the router (delivered one network latency later).
struct PendingKvBatch {
  size_t replica;
  uint64_t epoch;
  kv::EventBatch batch;
};

// One request (one turn of one session) from client send to client finish.
struct Req {
  size_t session = 0, turn = 0;
  std::string id;
  routing::RequestFeatures features;
  std::string gateway_text;  // the gateway's rendering of the messages (until finished)
  std::vector<TokenId> prompt;
  int max_tokens = 1;
  uint64_t seed = 0;
  int replica = -1;
  uint64_t epoch = 0;
  double client_send = 0, dispatched = 0, first_token_gw = -1, last_token = 0;
  std::vector<double> itl;
  std::string reply;
  routing::Usage usage;
  double predicted = -1, matched = 0, metrics_age = -1;
  bool precise = false;
  std::string error;
};

// A parsed scrape on its way to the router (delivered one network latency later).
struct PendingSnapshot {
  size_t replica;
  uint64_t epoch;
  routing::MetricsSnapshot snapshot;
  Seconds scraped_at;
};

// True when `a` and `b` render to the same Prometheus text (every rendered field equal).
bool SameMetrics(const engine::EngineMetrics& a, const engine::EngineMetrics& b);

class Runner {
 public:
  Runner(const std::vector<workload::Session>& sessions, const SimOptions& o)
      : sessions_(sessions),
        o_(o),
        router_(routing::RouterConfig{o.block_chars, "predicted-ttft", 5.0, o.seed}),
        rng_(o.seed ^ 0x5151u),
        replies_(sessions.size()),
        session_tokens_(sessions.size()) {
    for (const auto& spec : o.replicas) {
      Replica r;
      r.spec = spec;
      replicas_.push_back(std::move(r));
    }
    model_ = o.replicas.front().profile.model_name;
  }

  SimResult Run();

 private:
  void Handle(const Event& e, double L);
  void Join(size_t i);
  void RestartBegin(size_t k, double L);
  void RestartEnd(size_t k);
  void ClientSend(size_t s, size_t k, double L);
  Result<routing::Decision> OraclePick(Req& r, double L);
  void GatewayArrive(size_t idx, double L);
  void EngineArrive(size_t idx, double L);
  // Plans the replica's next step if it is idle; sleeps until a front-end delay ends.
  void Kick(size_t i);
  void StepEnd(size_t i, uint64_t epoch, double L);
  void GatewayFinished(size_t idx, bool ok, double L);
  void Scrape(size_t i, double L);
  // Precise mode: sends a replica's KV events to the router (one latency later).
  void PublishKvEvents(size_t i, std::vector<kv::KvEvent> events, double L);
  void DeliverKvEvents(uint64_t key);
  double Uniform();

  const std::vector<workload::Session>& sessions_;
  const SimOptions& o_;
  routing::Router router_;
  uint64_t rng_;
  std::string model_;
  EventQueue q_;
  Seconds now_ = 0;
  std::vector<Replica> replicas_;
  std::deque<Req> reqs_;
  std::unordered_map<std::string, size_t> by_engine_id_;
  std::unordered_map<uint64_t, PendingSnapshot> snapshots_;
  uint64_t next_snapshot_ = 0;
  std::unordered_map<uint64_t, PendingKvBatch> kv_batches_;
  uint64_t next_kv_batch_ = 0;
  kv::BlockHasher hasher_;  // the gateway's: vLLM's default NONE_HASH seed
  std::vector<std::vector<std::string>> replies_;
  // Per session: engine-sim tokens of its chat-templated messages so far (no generation
  // prompt) and how many messages they cover. The tokenizer is prefix-stable and every
  // templated message ends where a token ends (common/tokenizer.h), so a turn's prompt
  // is these plus its new messages' tokens: each message is tokenized once, not once
  // per later turn (tokenizing was a third of the simulator's CPU time).
  struct SessionTokens {
    std::vector<TokenId> tokens;
    size_t messages = 0;
  };
  std::vector<SessionTokens> session_tokens_;
  size_t next_session_ = 0, sessions_done_ = 0;
  double first_send_ = kNever, last_finish_ = 0;
  SimResult result_;
};

}  // namespace kinference::sim::internal
