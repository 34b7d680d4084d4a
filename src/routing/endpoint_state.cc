#include "routing/endpoint_state.h"

#include <algorithm>

namespace kinference::routing {

bool EndpointState::ObserveMetrics(const MetricsSnapshot& snap, Seconds at) {
  bool restarted = false;
  if (metrics) {
    if (at < scraped_at) return false;  // out of order: keep the newer one
    const MetricsSnapshot& old = *metrics;
    if (snap.prompt_tokens_total && old.prompt_tokens_total &&
        *snap.prompt_tokens_total < *old.prompt_tokens_total)
      restarted = true;
    // Average uncached prompt tokens per request since the last scrape.
    if (!restarted && snap.prompt_tokens_total && old.prompt_tokens_total &&
        snap.ttft_seconds_count && old.ttft_seconds_count) {
      double dreq = *snap.ttft_seconds_count - *old.ttft_seconds_count;
      double dtok = *snap.prompt_tokens_total - *old.prompt_tokens_total;
      if (dreq >= 1 && dtok >= 0) {
        double hit = 0;
        if (snap.prefix_cache_queries_total && old.prefix_cache_queries_total &&
            snap.prefix_cache_hits_total && old.prefix_cache_hits_total) {
          double dq = *snap.prefix_cache_queries_total - *old.prefix_cache_queries_total;
          double dh = *snap.prefix_cache_hits_total - *old.prefix_cache_hits_total;
          if (dq > 0) hit = std::clamp(dh / dq, 0.0, 1.0);
        }
        double sample = dtok / dreq * (1 - hit);
        other_prompt_tokens_ = 0.7 * other_prompt_tokens_ + 0.3 * sample;
      }
    }
  }
  metrics = snap;
  scraped_at = at;
  pending_at_scrape_ = awaiting_first_token();
  in_flight_at_scrape_ = in_flight;
  return restarted;
}

void EndpointState::AddPending(uint64_t seq, Seconds at, double uncached_tokens,
                               std::optional<TtftFeatures> own, double context_tokens,
                               std::vector<uint64_t> block_hashes, size_t cached_blocks) {
  RemovePending(seq);
  pending_[seq] = Pending{at,
                          std::max(0.0, uncached_tokens),
                          own,
                          std::max(0.0, context_tokens),
                          std::move(block_hashes),
                          cached_blocks};
  pending_ctx_ += std::max(0.0, context_tokens);
}

DecodeLoad EndpointState::Decoding(const QueueEstimate& q) const {
  const double own = std::max(0, in_flight - awaiting_first_token());
  const double mean = own > 0 ? own_running_ctx / own : kPriorContextTokens;
  return DecodeLoad{q.running_seqs,
                    std::max(0.0, own_running_ctx) + std::max(0.0, q.running_seqs - own) * mean};
}

DecodeLoad EndpointState::DecodingWithPending(const QueueEstimate& q) const {
  DecodeLoad d = Decoding(q);
  d.seqs += awaiting_first_token();
  d.ctx_tokens += std::max(0.0, pending_ctx_);
  return d;
}

void EndpointState::RemovePending(uint64_t seq, std::optional<Seconds> first_token_at) {
  auto it = pending_.find(seq);
  if (it == pending_.end()) return;
  // FCFS: requests dispatched after this one could not have started their prefill before
  // its first token (its last chunk shares the step with theirs at most).
  if (first_token_at && it == pending_.begin())
    head_free_at_ = std::max(head_free_at_, *first_token_at);
  pending_ctx_ -= it->second.context_tokens;
  pending_.erase(it);
  if (pending_.empty()) pending_ctx_ = 0;
}

size_t EndpointState::InProgressBlocks(std::span<const uint64_t> block_hashes,
                                       size_t matched_blocks) const {
  matched_blocks = std::min(matched_blocks, block_hashes.size());
  size_t most = 0;
  for (const auto& [seq, p] : pending_) {
    const size_t n = std::min(matched_blocks, p.block_hashes.size());
    if (n <= p.cached_blocks) continue;
    // Chained hashes: equal at i means equal up to i, so the shared prefix is the first
    // index where they differ (binary search).
    size_t lo = 0, hi = n;
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (p.block_hashes[mid] == block_hashes[mid])
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo > p.cached_blocks) most = std::max(most, lo - p.cached_blocks);
  }
  return most;
}

double EndpointState::PrefillRate() const {
  return 1000.0 / std::max(1e-6, predictor.coefficients()[1]);
}

QueueEstimate EndpointState::EstimateQueue(Seconds now, double stale_metrics_s) const {
  QueueEstimate q;
  double rate = PrefillRate();
  Seconds free_at = head_free_at_;
  for (const auto& [seq, p] : pending_) {
    double dur = p.own ? predictor.Work(*p.own) : p.uncached_tokens / rate;
    Seconds start = std::max(free_at, p.dispatched_at);
    Seconds finish = start + dur;
    q.own_tokens += std::clamp(finish - now, 0.0, dur) * rate;
    free_at = finish;
  }
  q.running_seqs = in_flight - awaiting_first_token();
  if (metrics) {
    double age = MetricsAge(now);
    double trust = age > stale_metrics_s ? 0.5 : 1.0;
    double waiting = metrics->num_requests_waiting.value_or(0);
    double other_waiting = std::max(0.0, waiting - pending_at_scrape_);
    q.other_tokens = trust * std::max(0.0, other_waiting * other_prompt_tokens_ - rate * age);
    double running = metrics->num_requests_running.value_or(0);
    q.running_seqs += trust * std::max(0.0, running - in_flight_at_scrape_);
  }
  return q;
}

}  // namespace kinference::routing
