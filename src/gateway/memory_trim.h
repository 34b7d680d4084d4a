// Gives the heap memory a load freed back to the operating system once the load has
// fallen (issue 24: after an overload the gateway's RSS stayed at its 62-92 MB peak).
//
// Why it is needed: glibc's malloc keeps freed chunks in its arenas for reuse and returns
// only the free top of the heap by itself, and only above M_TRIM_THRESHOLD, which its
// dynamic mmap threshold raises up to 64 MiB on 64-bit once a large block was freed
// (glibc malloc/malloc.c, "mmap_threshold" and "trim_threshold"; mallopt(3)). Chunks
// freed below a live one (fragmentation) are never returned without malloc_trim(3),
// which since glibc 2.8 also releases the whole free pages inside the heap.
//
// TrimPolicy decides, from periodic samples, when a trim is worth it: the heap holds at
// least `min_free_bytes` free, the process's anonymous resident memory grew by at least
// `min_free_bytes` since the last trim (free chunks a trim already gave back still count
// as free, so the free bytes alone would trim again and again), and the requests in
// flight are at most half of their peak since the last trim (the load fell; at steady
// load freed chunks are reused soon and a trim would only fault the pages back in).
// MemoryTrimmer runs it every `interval_s` on an io_context with mallinfo2(3)'s free bytes
// (fordblks) and /proc/self/statm's resident minus shared pages, and calls malloc_trim(0).
// Measured: docs/reliability.md "Memory after a load" (benchmarks/overload.py).
//
// Thread-safety: TrimPolicy is a plain value; MemoryTrimmer lives on its executor (Start,
// Stop and its timer there).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstddef>
#include <functional>
#include <memory>

namespace kinference::gateway {

struct MemoryTrimOptions {
  // Real seconds between samples. 5 s: our choice, well within issue 24's minute; a
  // sample is one mallinfo2 call (it walks the heap's free lists).
  double interval_s = 5;
  // Free heap bytes below which no trim is made. 4 MiB: about a quarter of the gateway's
  // idle RSS (docs/reliability.md), less is not worth the page faults of refilling it.
  size_t min_free_bytes = 4u << 20;
};

class TrimPolicy {
 public:
  explicit TrimPolicy(MemoryTrimOptions options = {}) : options_(options) {}
  // One sample: requests in flight now, the heap's free bytes and the anonymous resident
  // bytes (0: unknown, not a condition). True: trim now (the peak starts again from
  // `active_requests`); then call Trimmed with the anonymous resident bytes after the trim.
  bool Sample(size_t active_requests, size_t free_heap_bytes, size_t resident_anon_bytes);
  void Trimmed(size_t resident_anon_bytes) { anon_after_trim_ = resident_anon_bytes; }

 private:
  MemoryTrimOptions options_;
  size_t peak_active_ = 0;      // since the last trim
  size_t anon_after_trim_ = 0;  // anonymous resident bytes right after the last trim
};

// What MemoryTrimmer reads and does; the defaults are mallinfo2().fordblks,
// /proc/self/statm and malloc_trim(0) (tests inject their own).
struct MemoryTrimHooks {
  std::function<size_t()> active_requests;
  std::function<size_t()> free_heap_bytes;
  std::function<size_t()> resident_anon_bytes;
  std::function<void()> trim;
};

class MemoryTrimmer : public std::enable_shared_from_this<MemoryTrimmer> {
 public:
  MemoryTrimmer(boost::asio::any_io_executor executor, MemoryTrimHooks hooks,
                MemoryTrimOptions options = {});
  void Start();
  void Stop();
  size_t trims() const { return trims_; }

  // glibc's free heap bytes (mallinfo2().fordblks), the process's anonymous resident
  // bytes (/proc/self/statm: resident - shared pages; 0 when unreadable) and
  // malloc_trim(0).
  static size_t HeapFreeBytes();
  static size_t ResidentAnonBytes();
  static void TrimHeap();

 private:
  void Arm();
  boost::asio::steady_timer timer_;
  MemoryTrimHooks hooks_;
  MemoryTrimOptions options_;
  TrimPolicy policy_;
  size_t trims_ = 0;
  bool stopped_ = false;
};

}  // namespace kinference::gateway
