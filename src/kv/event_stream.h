// EventStream: one KV-event publisher's batches as a subscriber must apply them, in
// sequence order, with gaps filled from the publisher's replay socket and a restarted
// publisher (sequence back to 0) treated as an emptied cache.
//
// vLLM's ZmqEventPublisher numbers batches 0, 1, 2... per process and keeps the last
// `buffer_steps` (10,000 by default) for replay: a subscriber asks the replay ROUTER
// socket for every buffered batch from a sequence number on, and gets them in order,
// then an end marker (sequence -1). PUB/SUB drops messages when a subscriber is slow or
// (re)connecting, so a jump in sequence numbers is a gap to fill.
//
// Rules (live batch with sequence s, next expected e):
//   first batch seen   s == 0: apply. s > 0: joined mid-stream: replay from 0 (what the
//                      buffer no longer holds stays unknown: blocks stored before it are
//                      missing from the index, an underestimate).
//   s == e             apply.
//   s > e              gap: hold s, ask for a replay from e.
//   s < e              the publisher restarted (a new process counts from 0): clear the
//                      index; s == 0: apply; else replay from 0 as for a first batch.
//   during a replay    live batches are held (at most `max_held`; beyond it the replay
//                      is abandoned as below); replayed batches are applied in order.
//   joining            Join() (a subscriber that has just connected, with a replay socket)
//                      asks for everything buffered from 0 at once, so a publisher's
//                      history is known without waiting for its next batch (an idle
//                      engine sends none); an empty replay leaves 0 as the next expected.
//   replay answered    its end marker arrived (OnReplayEnd with answered): the stream
//                      then holds everything the publisher kept, which for an empty
//                      replay from 0 is nothing: vLLM publishes only when blocks are
//                      stored or removed, so an engine that has cached nothing has sent
//                      nothing. The step says so (`synced`), and the subscriber counts the
//                      feed live: its empty index is exact. A timed-out replay says
//                      nothing of the kind.
//   replay ends (end marker or timeout) or skips ahead (the buffer no longer reaches
//                      back): what is missing is lost; a lost BlockRemoved would leave
//                      the index claiming evicted blocks, so the index is cleared and
//                      rebuilt from the batches that follow (counted in resyncs).
// Pure: no sockets, no clock. The ZeroMQ subscriber (kv/zmq/subscriber.h) and the
// simulator drive it.
//
// Thread-safety: not thread-safe; one owner.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kinference::kv {

struct StreamStep {
  bool clear = false;  // forget the endpoint's index, then apply `apply`
  std::vector<std::pair<uint64_t, std::string>> apply;  // (sequence, payload), in order
  std::optional<uint64_t> replay_from;                  // request a replay from this seq
  // The replay's end marker came: with `apply`, the stream has everything the publisher
  // kept (for a Join on an idle engine: nothing, and that is exact).
  bool synced = false;
};

struct StreamCounters {
  uint64_t applied = 0;     // batches handed out to apply
  uint64_t gaps = 0;        // sequence jumps seen on the live stream
  uint64_t replayed = 0;    // batches recovered through replay
  uint64_t resyncs = 0;     // gaps replay could not fill (index cleared)
  uint64_t restarts = 0;    // publisher restarts (sequence went back)
  uint64_t duplicates = 0;  // batches already applied, dropped
};

class EventStream {
 public:
  explicit EventStream(size_t max_held = 100000) : max_held_(max_held) {}

  StreamStep OnLive(uint64_t seq, std::string payload);
  // Before any batch: replay from 0 (no-op once the stream has started or is replaying).
  StreamStep Join();
  StreamStep OnReplayed(uint64_t seq, std::string payload);
  // The replay's end marker (answered), or no answer in time, or no replay socket at all.
  StreamStep OnReplayEnd(bool answered);

  bool replaying() const { return replaying_; }
  std::optional<uint64_t> expected() const { return expected_; }
  const StreamCounters& counters() const { return counters_; }

 private:
  void Apply(StreamStep& step, uint64_t seq, std::string payload);
  void Clear(StreamStep& step);
  void StartReplay(StreamStep& step, uint64_t from);
  void DrainHeld(StreamStep& step);

  size_t max_held_;
  std::optional<uint64_t> expected_;
  bool replaying_ = false;
  std::map<uint64_t, std::string> held_;  // live batches waiting for a replay
  StreamCounters counters_;
};

}  // namespace kinference::kv
