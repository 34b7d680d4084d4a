// What the pii tagger reads: a request body's scan (JSON walk, inline documents, values,
// unscannable content), the normalisation (escapes, ICU NFKC, digit mapping) and every
// detector, on the raw bytes and on the body's scan with its split-value windows.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "policy/request_text.h"
#include "policy/scan_normalize.h"
#include "policy/taggers.h"

using namespace kinference::policy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // Normalising never grows the text beyond NFKC's bound (scan_normalize.h).
  std::string normal = NormalizeForScan(text);
  if (normal.size() > 11 * text.size() + 16) __builtin_trap();
  auto tags = PiiTags(text);
  if (!tags.empty() && tags.front() != "pii") __builtin_trap();
  RequestScan scan = ScanRequest(text);
  for (const auto& v : scan.values) {
    if (v.offset + v.size > scan.text.size()) __builtin_trap();
  }
  TaggerConfig config;
  TaggerInput in;
  in.text = scan.text;
  in.values = scan.values;
  in.tag_header = text.substr(0, 64);
  config.trust_tag_header = true;
  (void)RunTaggers(config, in);
  return 0;
}
