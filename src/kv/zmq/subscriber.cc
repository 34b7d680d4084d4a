#include "kv/zmq/subscriber.h"

#include <array>
#include <chrono>
#include <cstring>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "kv/event_codec.h"
#include "kv/event_stream.h"

namespace kinference::kv {
namespace {

uint64_t FromBigEndian(const zmq::message_t& m) {
  uint64_t v = 0;
  const auto* p = static_cast<const uint8_t*>(m.data());
  for (size_t i = 0; i < m.size() && i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

std::array<char, 8> BigEndian(uint64_t v) {
  std::array<char, 8> b;
  for (int i = 7; i >= 0; --i, v >>= 8) b[i] = static_cast<char>(v & 0xff);
  return b;
}

std::atomic<uint64_t> g_monitor_id{0};

}  // namespace

struct ZmqSubscriber::Impl {
  zmq::context_t ctx{1};
  zmq::socket_t sub{ctx, zmq::socket_type::sub};
  zmq::socket_t dealer{ctx, zmq::socket_type::dealer};
  zmq::socket_t monitor{ctx, zmq::socket_type::pair};
  bool has_replay = false;
  EventStream stream;
  std::chrono::steady_clock::time_point replay_deadline;
};

ZmqSubscriber::ZmqSubscriber(SubscriberOptions options, SubscriberSink sink)
    : options_(std::move(options)), sink_(std::move(sink)), impl_(std::make_unique<Impl>()) {}

Result<std::unique_ptr<ZmqSubscriber>> ZmqSubscriber::Start(SubscriberOptions options,
                                                            SubscriberSink sink) {
  std::unique_ptr<ZmqSubscriber> s(new ZmqSubscriber(std::move(options), std::move(sink)));
  Impl& i = *s->impl_;
  try {
    const std::string mon = "inproc://kv-sub-monitor-" + std::to_string(g_monitor_id++);
    if (zmq_socket_monitor(i.sub.handle(), mon.c_str(),
                           ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) != 0)
      return InvalidArgument("KV-event subscriber: cannot monitor its socket");
    i.monitor.connect(mon);
    i.sub.set(zmq::sockopt::linger, 0);
    i.sub.set(zmq::sockopt::rcvhwm, 100000);
    i.sub.set(zmq::sockopt::subscribe, s->options_.topic);
    i.sub.connect(s->options_.endpoint);
    if (!s->options_.replay_endpoint.empty()) {
      i.dealer.set(zmq::sockopt::linger, 0);
      i.dealer.connect(s->options_.replay_endpoint);
      i.has_replay = true;
    }
  } catch (const zmq::error_t& e) {
    return InvalidArgument("KV-event subscriber: bad endpoint '" + s->options_.endpoint +
                           "': " + e.what());
  }
  s->thread_ = std::thread([raw = s.get()] { raw->Run(); });
  return s;
}

ZmqSubscriber::~ZmqSubscriber() { Stop(); }

void ZmqSubscriber::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void ZmqSubscriber::Run() {
  Impl& s = *impl_;
  auto set_live = [&](bool live, const std::string& reason) {
    if (live_.exchange(live) != live && sink_.on_state) sink_.on_state(live, reason);
  };
  auto sync_counters = [&] {
    const StreamCounters& c = s.stream.counters();
    counters_.gaps = c.gaps;
    counters_.replayed = c.replayed;
    counters_.resyncs = c.resyncs;
    counters_.restarts = c.restarts;
  };
  // Decodes and hands over what the stream says to apply (counters first, so that what
  // the sink sees is already counted).
  auto deliver = [&](StreamStep step) {
    if (step.replay_from) {
      if (s.has_replay) {
        auto be = BigEndian(*step.replay_from);
        std::array<zmq::const_buffer, 2> req = {zmq::const_buffer(), zmq::buffer(be)};
        zmq::send_multipart(s.dealer, req, zmq::send_flags::dontwait);
        s.replay_deadline =
            std::chrono::steady_clock::now() +
            std::chrono::milliseconds(static_cast<int64_t>(options_.replay_timeout_s * 1000));
      } else {
        StreamStep end = s.stream.OnReplayEnd(false);  // nothing to ask: the gap stays
        step.clear = step.clear || end.clear;
        if (end.clear) step.apply.clear();
        for (auto& a : end.apply) step.apply.push_back(std::move(a));
      }
    }
    if (!step.clear && step.apply.empty() && !step.synced) return;
    std::vector<EventBatch> batches;
    bool clear = step.clear;
    std::string error;
    for (auto& [seq, payload] : step.apply) {
      Result<EventBatch> b = DecodeBatch(payload);
      if (!b.ok()) {
        ++counters_.decode_errors;
        error = b.status().message();
        clear = true;  // what it held is lost: start over from the next batch
        batches.clear();
        continue;
      }
      batches.push_back(std::move(*b));
    }
    counters_.batches += batches.size();
    sync_counters();
    if (sink_.on_events && (clear || !batches.empty())) sink_.on_events(clear, std::move(batches));
    if (!error.empty()) {
      set_live(false, "decoder failed: " + error);
    } else if (!step.apply.empty() || step.synced) {
      // A batch applied, or a replay's end marker: the index holds what the publisher
      // kept, nothing at all for an engine that has cached nothing yet.
      set_live(true, "");
    }
  };
  while (!stop_) {
    zmq::pollitem_t items[] = {{s.sub.handle(), 0, ZMQ_POLLIN, 0},
                               {s.monitor.handle(), 0, ZMQ_POLLIN, 0},
                               {s.dealer.handle(), 0, ZMQ_POLLIN, 0}};
    zmq::poll(items, s.has_replay ? 3 : 2, std::chrono::milliseconds(50));
    if (items[1].revents & ZMQ_POLLIN) {
      std::vector<zmq::message_t> ev;
      if (zmq::recv_multipart(s.monitor, std::back_inserter(ev), zmq::recv_flags::dontwait) &&
          !ev.empty() && ev[0].size() >= 2) {
        uint16_t kind = 0;
        std::memcpy(&kind, ev[0].data(), sizeof(kind));
        if (kind == ZMQ_EVENT_CONNECTED && s.has_replay) {
          // (Re)connected: learn what the publisher has buffered now rather than at its
          // next batch (kv/event_stream.h Join).
          deliver(s.stream.Join());
        } else if (kind == ZMQ_EVENT_DISCONNECTED) {
          // The publisher is gone: what it said may no longer hold (a restarted engine
          // has an empty cache). Start over with the next batch.
          ++counters_.disconnects;
          s.stream = EventStream();
          if (sink_.on_events) sink_.on_events(true, {});
          set_live(false, "publisher disconnected");
        }
      }
    }
    if (items[0].revents & ZMQ_POLLIN) {
      std::vector<zmq::message_t> msg;
      while (zmq::recv_multipart(s.sub, std::back_inserter(msg), zmq::recv_flags::dontwait)) {
        if (msg.size() == 3 && msg[1].size() == 8) {
          deliver(s.stream.OnLive(FromBigEndian(msg[1]), msg[2].to_string()));
        } else {
          ++counters_.decode_errors;
          if (sink_.on_events) sink_.on_events(true, {});
          set_live(false, "malformed message: " + std::to_string(msg.size()) + " frames");
        }
        msg.clear();
      }
    }
    if (s.has_replay && (items[2].revents & ZMQ_POLLIN)) {
      std::vector<zmq::message_t> msg;
      while (zmq::recv_multipart(s.dealer, std::back_inserter(msg), zmq::recv_flags::dontwait)) {
        // ["", seq, payload] or ["", topic, seq, payload].
        size_t at = msg.size() == 4 ? 2 : 1;
        if (msg.size() >= 3 && msg[at].size() == 8) {
          uint64_t seq = FromBigEndian(msg[at]);
          if (seq == ~uint64_t{0}) {
            deliver(s.stream.OnReplayEnd(/*answered=*/true));
          } else {
            deliver(s.stream.OnReplayed(seq, msg[at + 1].to_string()));
          }
        }
        msg.clear();
      }
    }
    if (s.stream.replaying() && std::chrono::steady_clock::now() > s.replay_deadline) {
      ++counters_.replay_timeouts;
      deliver(s.stream.OnReplayEnd(/*answered=*/false));
    }
    sync_counters();
  }
}

}  // namespace kinference::kv
