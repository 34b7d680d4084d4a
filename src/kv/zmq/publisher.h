// ZmqPublisher: publishes KV-event batches the way vLLM's ZmqEventPublisher does
// (vllm/distributed/kv_events.py), for engine-sim.
//
// Wire: a PUB socket sends [topic, 8-byte big-endian sequence (0, 1, 2...), msgpack
// batch (kv/event_codec.h)]; a ROUTER socket answers a replay request [identity, "",
// start_seq 8 bytes BE] with [identity, "", seq, payload] for every buffered batch from
// start_seq on, then [identity, "", -1 as 8 bytes, ""] (vLLM 0.32's framing; the
// subscriber also accepts a topic frame before seq). The last `buffer_steps` batches
// (vLLM's default 10,000) are kept for replay.
//
// Endpoints: "tcp://127.0.0.1:0" binds an ephemeral port; endpoint() and
// replay_endpoint() give the bound addresses. Both sockets bind (vLLM binds for a
// wildcard address, which is what a subscriber meets in practice).
//
// Threading: one thread owns both sockets; Publish() is thread-safe and returns at once
// (the batch is queued, encoded and sent by that thread). Errors: Start() returns
// kInvalidArgument when an endpoint cannot be bound. Memory: the replay buffer is
// bounded by buffer_steps; the send queue by `max_queue` (beyond it the oldest queued
// batch is dropped and counted, as a PUB socket past its high-water mark drops).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "kv/event_codec.h"
#include "kv/events.h"

namespace kinference::kv {

struct PublisherOptions {
  std::string endpoint = "tcp://127.0.0.1:0";
  std::string replay_endpoint = "tcp://127.0.0.1:0";  // empty: no replay socket
  std::string topic = "kv";
  size_t buffer_steps = 10000;
  size_t max_queue = 100000;
  EventEncoding encoding = EventEncoding::kMap;
  HashEncoding hashes = HashEncoding::kInt;
};

class ZmqPublisher {
 public:
  static Result<std::unique_ptr<ZmqPublisher>> Start(PublisherOptions options);
  ~ZmqPublisher();  // stops the thread; queued batches not yet sent are dropped
  ZmqPublisher(const ZmqPublisher&) = delete;
  ZmqPublisher& operator=(const ZmqPublisher&) = delete;

  void Publish(const EventBatch& batch);
  // For tests of gap recovery: the next batch gets its sequence number and enters the
  // replay buffer, but is not sent on the PUB socket (as if PUB/SUB had dropped it).
  void DropNextForTest() { drop_next_ = true; }

  const std::string& endpoint() const { return endpoint_; }
  const std::string& replay_endpoint() const { return replay_endpoint_; }
  uint64_t published() const { return published_; }
  uint64_t dropped() const { return dropped_; }

 private:
  struct Impl;
  explicit ZmqPublisher(PublisherOptions options);
  void Run();

  PublisherOptions options_;
  std::unique_ptr<Impl> impl_;
  std::string endpoint_, replay_endpoint_;
  std::mutex mu_;
  std::deque<std::pair<std::string, bool>> queue_;  // (payload, send on PUB)
  std::atomic<bool> stop_{false}, drop_next_{false};
  std::atomic<uint64_t> published_{0}, dropped_{0};
  std::thread thread_;
};

}  // namespace kinference::kv
