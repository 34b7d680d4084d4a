// Internal to the HTTP library: the request-body bytes one http::Server holds at once,
// across all its connections (ServerOptions::max_buffered_body_bytes), and one request's
// share of them.
//
// What is counted: the body bytes of each request from its header until its response
// has ended (or its connection closed): a body with a Content-Length counts that length
// from its header on (a reservation: Beast's string body allocates the declared length
// when the body starts, and a body that cannot fit is refused before any byte of it is
// read); a chunked body counts the bytes received so far, growing with each read
// (Beast reads at most 64 KiB at a time, so a refused chunked body has received at most
// that much past the limit). Not counted: headers, the connection's read buffer, response
// bytes, allocator overhead (a chunked body's string may have up to twice its size
// allocated).
//
// Small bodies: a request whose body is at most kAlwaysAdmittedBodyBytes is never refused
// (it is counted, so it can take the budget above its limit): large uploads in flight must
// not stop ordinary requests, which are a few KiB. Their bytes are bounded by the number
// of connections instead (ServerOptions::max_connections): the total held is at most
// limit + max_connections x kAlwaysAdmittedBodyBytes.
//
// Thread-safety: BodyBudget is safe from any thread (atomic); a BodyReservation belongs
// to one session (its strand).
#pragma once

#include <atomic>
#include <cstddef>

namespace kinference::http::detail {

// 64 KiB: the same line as the gateway's kAuthBeforeBodyBytes (gateway.cc): far above a
// typical chat body (a few KiB), and what one connection's pipelined bytes may already
// hold in its read buffer (session.h, OnWatch).
inline constexpr size_t kAlwaysAdmittedBodyBytes = 64 * 1024;

class BodyBudget {
 public:
  // limit: bytes at most (0: no limit; bytes are still counted).
  explicit BodyBudget(size_t limit) : limit_(limit) {}
  BodyBudget(const BodyBudget&) = delete;
  BodyBudget& operator=(const BodyBudget&) = delete;

  size_t limit() const { return limit_; }
  // Bytes held now, by all reservations.
  size_t used() const { return used_.load(std::memory_order_relaxed); }

  // Takes `bytes` more for a request whose share becomes `total` bytes. Refused (false,
  // nothing taken) when they do not fit under the limit, unless `total` is at most
  // kAlwaysAdmittedBodyBytes or there is no limit.
  bool TryTake(size_t bytes, size_t total) {
    if (limit_ == 0 || total <= kAlwaysAdmittedBodyBytes) {
      used_.fetch_add(bytes, std::memory_order_relaxed);
      return true;
    }
    size_t now = used_.load(std::memory_order_relaxed);
    do {
      if (now > limit_ || bytes > limit_ - now) return false;
    } while (!used_.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
    return true;
  }
  void Give(size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

 private:
  const size_t limit_;
  std::atomic<size_t> used_{0};
};

// One request's share of a BodyBudget; returned by Release or when destroyed. The budget
// must outlive it.
class BodyReservation {
 public:
  explicit BodyReservation(BodyBudget& budget) : budget_(budget) {}
  ~BodyReservation() { Release(); }
  BodyReservation(const BodyReservation&) = delete;
  BodyReservation& operator=(const BodyReservation&) = delete;

  // Grows the share to `total` bytes (no-op when it holds that many already). false: it
  // does not fit (BodyBudget::TryTake); the share is unchanged.
  bool GrowTo(size_t total) {
    if (total <= held_) return true;
    if (!budget_.TryTake(total - held_, total)) return false;
    held_ = total;
    return true;
  }
  void Release() {
    budget_.Give(held_);
    held_ = 0;
  }
  size_t held() const { return held_; }

 private:
  BodyBudget& budget_;
  size_t held_ = 0;
};

}  // namespace kinference::http::detail
