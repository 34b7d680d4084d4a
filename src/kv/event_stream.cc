#include "kv/event_stream.h"

#include <iterator>

namespace kinference::kv {

void EventStream::Apply(StreamStep& step, uint64_t seq, std::string payload) {
  step.apply.emplace_back(seq, std::move(payload));
  expected_ = seq + 1;
  ++counters_.applied;
}

void EventStream::Clear(StreamStep& step) {
  step.clear = true;
  step.apply.clear();  // applied before the clear: wiped by it
}

void EventStream::StartReplay(StreamStep& step, uint64_t from) {
  replaying_ = true;
  expected_ = from;
  step.replay_from = from;
}

StreamStep EventStream::OnLive(uint64_t seq, std::string payload) {
  StreamStep step;
  if (replaying_) {
    if (held_.size() >= max_held_) {
      // The replay is not keeping up: give it up and resynchronise from what is held.
      held_.emplace(seq, std::move(payload));
      replaying_ = false;
      DrainHeld(step);
      return step;
    }
    held_.emplace(seq, std::move(payload));
    return step;
  }
  if (!expected_) {
    if (seq == 0) {
      Apply(step, seq, std::move(payload));
    } else {
      held_.emplace(seq, std::move(payload));
      StartReplay(step, 0);
    }
    return step;
  }
  if (seq == *expected_) {
    Apply(step, seq, std::move(payload));
  } else if (seq > *expected_) {
    ++counters_.gaps;
    held_.emplace(seq, std::move(payload));
    StartReplay(step, *expected_);
  } else {
    ++counters_.restarts;
    Clear(step);
    if (seq == 0) {
      Apply(step, seq, std::move(payload));
    } else {
      held_.emplace(seq, std::move(payload));
      StartReplay(step, 0);
    }
  }
  return step;
}

StreamStep EventStream::Join() {
  StreamStep step;
  if (!expected_ && !replaying_) StartReplay(step, 0);
  return step;
}

StreamStep EventStream::OnReplayed(uint64_t seq, std::string payload) {
  StreamStep step;
  if (!replaying_ || !expected_ || seq < *expected_) {
    ++counters_.duplicates;
    return step;
  }
  if (seq > *expected_) {
    ++counters_.resyncs;  // the buffer no longer reaches back to what was missed
    Clear(step);
  }
  ++counters_.replayed;
  Apply(step, seq, std::move(payload));
  auto stale = held_.lower_bound(*expected_);  // held live batches now replayed
  counters_.duplicates += static_cast<uint64_t>(std::distance(held_.begin(), stale));
  held_.erase(held_.begin(), stale);
  return step;
}

StreamStep EventStream::OnReplayEnd(bool answered) {
  StreamStep step;
  if (!replaying_) return step;
  replaying_ = false;
  step.synced = answered;
  DrainHeld(step);
  return step;
}

void EventStream::DrainHeld(StreamStep& step) {
  for (auto& [seq, payload] : held_) {
    if (expected_ && seq < *expected_) {
      ++counters_.duplicates;
      continue;
    }
    if (expected_ && seq > *expected_) {
      ++counters_.resyncs;
      Clear(step);
    }
    Apply(step, seq, std::move(payload));
  }
  held_.clear();
}

}  // namespace kinference::kv
