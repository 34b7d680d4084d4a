#include "gateway/memory_trim.h"

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace kinference::gateway {

bool TrimPolicy::Sample(size_t active_requests, size_t free_heap_bytes,
                        size_t resident_anon_bytes) {
  peak_active_ = std::max(peak_active_, active_requests);
  if (free_heap_bytes < options_.min_free_bytes || active_requests * 2 > peak_active_ ||
      (resident_anon_bytes != 0 &&
       resident_anon_bytes < anon_after_trim_ + options_.min_free_bytes)) {
    return false;
  }
  peak_active_ = active_requests;
  return true;
}

MemoryTrimmer::MemoryTrimmer(boost::asio::any_io_executor executor, MemoryTrimHooks hooks,
                             MemoryTrimOptions options)
    : timer_(std::move(executor)), hooks_(std::move(hooks)), options_(options), policy_(options) {
  if (!hooks_.free_heap_bytes) hooks_.free_heap_bytes = HeapFreeBytes;
  if (!hooks_.trim) hooks_.trim = TrimHeap;
  if (!hooks_.resident_anon_bytes) hooks_.resident_anon_bytes = ResidentAnonBytes;
  if (!hooks_.active_requests) hooks_.active_requests = [] { return size_t{0}; };
}

void MemoryTrimmer::Start() {
  stopped_ = false;
  Arm();
}

void MemoryTrimmer::Stop() {
  stopped_ = true;
  timer_.cancel();
}

void MemoryTrimmer::Arm() {
  if (stopped_ || options_.interval_s <= 0) return;
  timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options_.interval_s)));
  timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || self->stopped_) return;
    const size_t free_bytes = self->hooks_.free_heap_bytes();
    if (self->policy_.Sample(self->hooks_.active_requests(), free_bytes,
                             self->hooks_.resident_anon_bytes())) {
      self->hooks_.trim();
      self->policy_.Trimmed(self->hooks_.resident_anon_bytes());
      ++self->trims_;
      spdlog::debug("gateway: returned free heap memory to the OS ({} bytes were free)",
                    free_bytes);
    }
    self->Arm();
  });
}

size_t MemoryTrimmer::HeapFreeBytes() { return mallinfo2().fordblks; }

size_t MemoryTrimmer::ResidentAnonBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0, shared = 0;
  const int n = std::fscanf(f, "%llu %llu %llu", &size, &resident, &shared);
  std::fclose(f);
  if (n != 3 || shared > resident) return 0;
  return static_cast<size_t>((resident - shared) * static_cast<unsigned long long>(getpagesize()));
}

void MemoryTrimmer::TrimHeap() { malloc_trim(0); }

}  // namespace kinference::gateway
