// EventQueue: the discrete-event loop's agenda, ordered by (virtual time, sequence
// number) so that events at equal times run in the order they were scheduled; this is
// what makes a simulation deterministic.
//
// Thread-safety: not thread-safe; one per simulation.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "common/clock.h"

namespace kinference::sim {

enum class EventKind {
  kClientSend,         // a: session, b: turn
  kGatewayArrive,      // a: request
  kEngineArrive,       // a: request
  kStepEnd,            // a: replica, b: epoch
  kWake,               // a: replica, b: epoch
  kGatewayFirstToken,  // a: request
  kGatewayFinished,    // a: request, b: 1 = success, 0 = error, 2 = failed before first token
  kScrape,             // a: replica, b: gateway
  kDeliverMetrics,     // a: pending snapshot index
  kQueueTimeout,       // a: request, b: its queue_count (waited at its gateway too long)
  kJoin,               // a: replica
  kLeave,              // a: replica
  kRestart,            // a: restart index
  kRestartDone,        // a: restart index
  kDeliverKvEvents,    // a: pending KV-event batch index
};

struct Event {
  Seconds t = 0;
  uint64_t seq = 0;
  EventKind kind = EventKind::kClientSend;
  uint64_t a = 0, b = 0;
};

class EventQueue {
 public:
  void Push(Seconds t, EventKind kind, uint64_t a = 0, uint64_t b = 0) {
    q_.push(Event{t, next_seq_++, kind, a, b});
  }
  bool empty() const { return q_.empty(); }
  Event Pop() {
    Event e = q_.top();
    q_.pop();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& x, const Event& y) const {
      return x.t != y.t ? x.t > y.t : x.seq > y.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> q_;
  uint64_t next_seq_ = 0;
};

}  // namespace kinference::sim
