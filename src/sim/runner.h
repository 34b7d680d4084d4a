// Runner: the event loop behind sim/simulation.h, private to src/sim. simulation.cc holds
// the loop and the client; gateway.cc the gateway replicas (routing, admission queue,
// retries, completions); replicas.cc the engines, scrapes and cluster dynamics (join,
// leave, restart).
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

#include "common/prefix_tokenizer.h"
#include "engine/engine.h"
#include "engine/metrics.h"
#include "kv/block_hash.h"
#include "routing/metrics_snapshot.h"
#include "routing/router.h"
#include "sim/bound.h"
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
  uint64_t kv_seq = 0;  // next KV-event batch sequence number (0 again after a restart)
};

// A KV-event batch on its way to the router (delivered one network latency later).
struct PendingKvBatch {
  size_t replica;
  uint64_t epoch;
  kv::EventBatch batch;
};

// One gateway replica: its router, its admission queue, and what it knows of each
// replica's health from its own scrapes (as gateway/upstream/scraper.cc: unhealthy after
// kUnhealthyAfterFailures consecutive failed scrapes, healthy again at the next success).
struct Gateway {
  std::unique_ptr<routing::Router> router;
  std::deque<size_t> queue;         // requests waiting for admission, FIFO
  std::vector<int> failed_scrapes;  // per replica, consecutive
  std::vector<bool> healthy;        // per replica, as this gateway believes
  std::vector<int> awaiting;        // per replica: its requests there without a first token
};
inline constexpr int kUnhealthyAfterFailures = 3;  // gateway/context.h

// One request (one turn of one session) from client send to client finish.
struct Req {
  size_t session = 0, turn = 0;
  std::string id;
  size_t gateway = 0;
  routing::RequestFeatures features;
  std::string gateway_text;  // the gateway's rendering of the messages (until finished)
  std::vector<TokenId> prompt;
  size_t prompt_tokens = 0;
  int max_tokens = 1;
  uint64_t seed = 0;
  int replica = -1;
  uint64_t epoch = 0;
  double client_send = 0, gateway_arrive = 0, first_dispatch = -1, dispatched = -1,
         first_token_gw = -1, last_token = 0;
  std::vector<double> itl;
  std::string reply;
  routing::Usage usage;
  double predicted = -1, matched = 0, metrics_age = -1;
  bool precise = false;
  std::string error;
  std::vector<std::string> tried;  // endpoints a failed attempt went to
  int retries = 0;
  bool awaiting_counted = false;  // counted in its gateway's Gateway::awaiting
  uint64_t queue_count = 0;       // times queued at the gateway (matches kQueueTimeout)
  int passed_over = 0;            // admissions that took a later waiter by cache affinity
  bool first_token_seen = false;  // at the engine
  TokenChain chain;               // for the lower bound (prompt, then outputs)
  size_t chain_recorded = 0;      // leading hashes of `chain` given to the bound
  double bound_ttft = -1, bound_e2e = -1;
};

// A parsed scrape on its way to a router (delivered one network latency later).
struct PendingSnapshot {
  size_t replica;
  size_t gateway;
  uint64_t epoch;
  routing::MetricsSnapshot snapshot;
  Seconds scraped_at;
};

// What routing::ParsePrometheusText(engine::RenderPrometheus(m, p, model, engine), model)
// returns, without rendering and parsing the text (numbers are rendered shortest-round-
// trip, so nothing is lost; tests/sim checks the two agree). Rendering and parsing every
// scrape was most of the simulator's time with 50 ms scrapes (gie, llmd-sticky).
routing::MetricsSnapshot SnapshotOf(const engine::EngineMetrics& m,
                                    const engine::HardwareProfile& p);

class Runner {
 public:
  Runner(const workload::SessionSource& sessions, const SimOptions& o);

  SimResult Run();

 private:
  void Handle(const Event& e, double L);
  // replicas.cc
  void Join(size_t i);
  void Leave(size_t i);
  void RestartBegin(size_t k, double L);
  void RestartEnd(size_t k);
  void EngineArrive(size_t idx, double L);
  // Plans the replica's next step if it is idle; sleeps until a front-end delay ends.
  void Kick(size_t i);
  void StepEnd(size_t i, uint64_t epoch, double L);
  void Scrape(size_t i, size_t g, double L);
  void DeliverMetrics(uint64_t key);
  // simulation.cc
  void ClientSend(size_t s, size_t k, double L);
  size_t GatewayOf(size_t session);
  // gateway.cc
  void GatewayArrive(size_t idx, double L);
  // Routes and dispatches `idx` now, or queues it while every endpoint is saturated.
  void Admit(size_t idx, double L);
  bool Saturated(const Gateway& g, size_t replica) const;
  // Endpoints `r` may be dispatched to now: in the router, healthy, not saturated, not tried.
  std::vector<std::string> OpenCandidates(const Gateway& g, const Req& r) const;
  void Dispatch(size_t idx, double L);
  void DrainQueue(size_t g, double L);
  Result<routing::Decision> OraclePick(Req& r, const std::vector<std::string>& candidates,
                                       double L);
  void GatewayFirstToken(size_t idx, double L);
  // A failed attempt (connection refused or dropped before the first token): retried
  // once on another endpoint, as the gateway does (gateway/exchange/exchange_relay.cc).
  void AttemptFailed(size_t idx, const std::string& why, double L);
  void GatewayFinished(size_t idx, bool ok, double L);
  // Precise mode: sends a replica's KV events to the routers (one latency later).
  void PublishKvEvents(size_t i, std::vector<kv::KvEvent> events, double L);
  void DeliverKvEvents(uint64_t key);
  double Uniform();

  const workload::SessionSource& sessions_;
  const SimOptions& o_;
  std::vector<Gateway> gateways_;
  uint64_t rng_;
  std::string model_;
  EventQueue q_;
  Seconds now_ = 0;
  std::vector<Replica> replicas_;
  // Requests from client send to client finish, by request index (erased when done).
  std::unordered_map<size_t, Req> reqs_;
  size_t next_req_ = 0;
  std::unordered_map<std::string, size_t> by_engine_id_;
  std::unordered_map<uint64_t, PendingSnapshot> snapshots_;
  uint64_t next_snapshot_ = 0;
  std::unordered_map<uint64_t, PendingKvBatch> kv_batches_;
  uint64_t next_kv_batch_ = 0;
  kv::BlockHasher hasher_;  // the gateway's: vLLM's default NONE_HASH seed
  // A session from its first send to its last turn's finish: generated when it starts
  // (SessionSource::Get) and dropped when it ends, so memory follows the sessions in
  // flight. `tokens`: engine-sim tokens of its chat-templated messages so far (no
  // generation prompt), covering `messages` messages. The tokenizer is prefix-stable and
  // every templated message ends where a token ends (common/tokenizer.h), so a turn's
  // prompt is these plus its new messages' tokens: each message is tokenized once, not
  // once per later turn (tokenizing was a third of the simulator's CPU time).
  struct LiveSession {
    workload::Session session;
    std::vector<std::string> replies;
    std::vector<TokenId> tokens;
    size_t messages = 0;
  };
  std::unordered_map<size_t, LiveSession> live_;
  // Reuses the tokens of shared prompt prefixes (shared-prefix, trace): same ids as
  // Tokenize, a quarter of the CPU time less on shared-prefix.
  PrefixTokenizer tokenizer_;
  std::optional<LowerBound> bound_;
  size_t next_session_ = 0, sessions_done_ = 0;
  double first_send_ = kNever, last_finish_ = 0;
  SimResult result_;
};

}  // namespace kinference::sim::internal
