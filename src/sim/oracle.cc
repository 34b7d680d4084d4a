#include "sim/oracle.h"

#include <algorithm>
#include <cmath>

namespace kinference::sim {

double OracleTtft(const engine::HardwareProfile& p, const OracleInputs& in) {
  const double prompt = std::max(0, in.prompt_tokens);
  const double hit = std::clamp(static_cast<double>(in.hit_tokens), 0.0, prompt);
  const double own = prompt - hit;
  const double work = own + std::max(0, in.queued_prefill_tokens);
  const int budget = std::max(1, p.max_num_batched_tokens);
  const int decodes = std::clamp(in.running, 0, budget - 1);
  const double per_step_prefill = static_cast<double>(budget - decodes);
  const double steps = std::max(1.0, std::ceil(work / per_step_prefill));
  double per_step = p.step_overhead_s;
  if (decodes > 0) per_step += p.decode_base_s + p.decode_s_per_seq * decodes;
  return p.frontend_s_per_prompt_token * prompt + steps * per_step + p.prefill_s_per_token * work +
         p.attn_s_per_token_ctx * own * (hit + own / 2);
}

}  // namespace kinference::sim
