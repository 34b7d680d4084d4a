// ZmqSubscriber: follows one vLLM (or engine-sim) KV-event publisher and hands its
// batches, decoded and in sequence order, to a sink: the gateway's link between a
// local endpoint and the router's precise index.
//
// What it does (kv/event_stream.h has the ordering rules):
//   - SUB socket connected to `endpoint`, subscribed to `topic`; a DEALER socket
//     connected to `replay_endpoint` (optional) asks for missed batches: ["",
//     start_seq 8 bytes BE] -> ["", (topic,) seq, payload]... then seq = -1. A replay
//     unanswered after `replay_timeout_s` counts as ended.
//   - on connecting (and reconnecting) it asks the replay socket for every buffered batch
//     (EventStream::Join), so what an engine already caches is known at once;
//   - the SUB socket's connection is watched (ZeroMQ socket monitor): a disconnect (the
//     publisher died) clears what is known, resets the sequence (the next batch starts
//     over: replay from 0, or seq 0 from a new process) and reports the feed not live;
//   - a payload that does not decode (kv/event_codec.h) clears the index and reports the
//     feed not live, with the decoder's message; the next batch that decodes makes it
//     live again (what follows is applied on top of an empty index: an underestimate);
//   - the feed is live once a batch has been applied since the last disconnect or
//     decoder failure, or once the replay asked for on connecting has ended with its end
//     marker: an engine that has stored no block has published nothing, and its replay
//     answers with the end marker alone; the feed is then live with an empty index,
//     which is exact. A replay without an answer in time does not count.
// The sink's calls come from the subscriber's own thread, in order; the gateway posts
// them to the router's strand.
//
// Threading: Start() spawns one thread that owns the sockets; Stop()/the destructor
// join it. Counters are readable from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "kv/events.h"

namespace kinference::kv {

struct SubscriberOptions {
  std::string endpoint;         // e.g. tcp://10.0.0.5:5557
  std::string replay_endpoint;  // e.g. tcp://10.0.0.5:5558; empty: gaps are not refilled
  std::string topic = "kv";     // vLLM's kv_events_config.topic ("" subscribes to all)
  double replay_timeout_s = 2.0;
};

struct SubscriberSink {
  // `clear`: forget the endpoint's index first; then apply `batches` in order.
  std::function<void(bool clear, std::vector<EventBatch> batches)> on_events;
  // The feed became live or stopped being live; `reason` says why when not live.
  std::function<void(bool live, const std::string& reason)> on_state;
};

struct SubscriberCounters {
  std::atomic<uint64_t> batches{0}, decode_errors{0}, gaps{0}, replayed{0}, resyncs{0}, restarts{0},
      disconnects{0}, replay_timeouts{0};
};

class ZmqSubscriber {
 public:
  static Result<std::unique_ptr<ZmqSubscriber>> Start(SubscriberOptions options,
                                                      SubscriberSink sink);
  ~ZmqSubscriber();
  ZmqSubscriber(const ZmqSubscriber&) = delete;
  ZmqSubscriber& operator=(const ZmqSubscriber&) = delete;
  void Stop();

  bool live() const { return live_; }
  const SubscriberCounters& counters() const { return counters_; }
  const SubscriberOptions& options() const { return options_; }

 private:
  struct Impl;
  ZmqSubscriber(SubscriberOptions options, SubscriberSink sink);
  void Run();

  SubscriberOptions options_;
  SubscriberSink sink_;
  std::unique_ptr<Impl> impl_;
  SubscriberCounters counters_;
  std::atomic<bool> stop_{false}, live_{false};
  std::thread thread_;
};

}  // namespace kinference::kv
