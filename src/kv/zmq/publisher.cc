#include "kv/zmq/publisher.h"

#include <array>
#include <zmq.hpp>
#include <zmq_addon.hpp>

namespace kinference::kv {
namespace {

std::array<char, 8> BigEndian(uint64_t v) {
  std::array<char, 8> b;
  for (int i = 7; i >= 0; --i, v >>= 8) b[i] = static_cast<char>(v & 0xff);
  return b;
}

uint64_t FromBigEndian(const zmq::message_t& m) {
  uint64_t v = 0;
  const auto* p = static_cast<const uint8_t*>(m.data());
  for (size_t i = 0; i < m.size() && i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

// "tcp://127.0.0.1:0" -> "tcp://127.0.0.1:*" (ZeroMQ's ephemeral port).
std::string Bindable(const std::string& ep) {
  if (ep.size() > 2 && ep.compare(ep.size() - 2, 2, ":0") == 0)
    return ep.substr(0, ep.size() - 1) + "*";
  return ep;
}

}  // namespace

struct ZmqPublisher::Impl {
  zmq::context_t ctx{1};
  zmq::socket_t pub{ctx, zmq::socket_type::pub};
  zmq::socket_t replay{ctx, zmq::socket_type::router};
  bool has_replay = false;
  std::deque<std::pair<uint64_t, std::string>> buffer;
  uint64_t next_seq = 0;
};

ZmqPublisher::ZmqPublisher(PublisherOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>()) {}

Result<std::unique_ptr<ZmqPublisher>> ZmqPublisher::Start(PublisherOptions options) {
  std::unique_ptr<ZmqPublisher> p(new ZmqPublisher(std::move(options)));
  try {
    p->impl_->pub.set(zmq::sockopt::linger, 0);
    p->impl_->pub.set(zmq::sockopt::sndhwm, 100000);
    p->impl_->pub.bind(Bindable(p->options_.endpoint));
    p->endpoint_ = p->impl_->pub.get(zmq::sockopt::last_endpoint);
    if (!p->options_.replay_endpoint.empty()) {
      p->impl_->replay.set(zmq::sockopt::linger, 0);
      p->impl_->replay.bind(Bindable(p->options_.replay_endpoint));
      p->replay_endpoint_ = p->impl_->replay.get(zmq::sockopt::last_endpoint);
      p->impl_->has_replay = true;
    }
  } catch (const zmq::error_t& e) {
    return InvalidArgument(std::string("KV-event publisher: cannot bind: ") + e.what());
  }
  p->thread_ = std::thread([raw = p.get()] { raw->Run(); });
  return p;
}

ZmqPublisher::~ZmqPublisher() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void ZmqPublisher::Publish(const EventBatch& batch) {
  std::string payload = EncodeBatch(batch, options_.encoding, options_.hashes);
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.size() >= options_.max_queue) {
    queue_.pop_front();
    ++dropped_;
  }
  queue_.emplace_back(std::move(payload), !drop_next_.exchange(false));
}

void ZmqPublisher::Run() {
  Impl& s = *impl_;
  const std::string topic = options_.topic;
  while (!stop_) {
    if (s.has_replay) {
      zmq::pollitem_t items[] = {{s.replay.handle(), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, 1, std::chrono::milliseconds(2));
      if (items[0].revents & ZMQ_POLLIN) {
        std::vector<zmq::message_t> req;
        if (zmq::recv_multipart(s.replay, std::back_inserter(req), zmq::recv_flags::dontwait) &&
            req.size() == 3) {
          const uint64_t start = FromBigEndian(req[2]);
          for (const auto& [seq, payload] : s.buffer) {
            if (seq < start) continue;
            auto be = BigEndian(seq);
            std::array<zmq::const_buffer, 4> parts = {zmq::buffer(req[0].data(), req[0].size()),
                                                      zmq::const_buffer(), zmq::buffer(be),
                                                      zmq::buffer(payload)};
            zmq::send_multipart(s.replay, parts);
          }
          auto end = BigEndian(~uint64_t{0});  // -1: end of replay
          std::array<zmq::const_buffer, 4> parts = {zmq::buffer(req[0].data(), req[0].size()),
                                                    zmq::const_buffer(), zmq::buffer(end),
                                                    zmq::const_buffer()};
          zmq::send_multipart(s.replay, parts);
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::deque<std::pair<std::string, bool>> batch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      batch.swap(queue_);
    }
    for (auto& [payload, send] : batch) {
      const uint64_t seq = s.next_seq++;
      if (send) {
        auto be = BigEndian(seq);
        std::array<zmq::const_buffer, 3> parts = {zmq::buffer(topic), zmq::buffer(be),
                                                  zmq::buffer(payload)};
        zmq::send_multipart(s.pub, parts, zmq::send_flags::dontwait);
      }
      s.buffer.emplace_back(seq, std::move(payload));
      if (s.buffer.size() > options_.buffer_steps) s.buffer.pop_front();
      ++published_;
    }
  }
}

}  // namespace kinference::kv
