#include "tokenizer/bpe.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <boost/json.hpp>
#include <fstream>
#include <limits>
#include <sstream>

namespace kinference::tokenizer {
namespace {

// GPT-2's pre-tokenizer pattern (tokenizers' ByteLevel with use_regex).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Qwen2's (transformers' Qwen2Tokenizer PRETOKENIZE_REGEX).
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to 256 + n.
std::array<std::string, 256> ByteAlphabet() {
  std::array<std::string, 256> out;
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    AppendUtf8(out[b], printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + n++));
  }
  return out;
}

struct Regex {
  pcre2_code* code = nullptr;
  ~Regex() {
    if (code) pcre2_code_free(code);
  }
};

}  // namespace

struct BpeTokenizer::Impl {
  std::unordered_map<std::string, uint32_t> vocab;
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> merges;  // (a,b) -> (rank, id)
  std::vector<std::pair<std::string, uint32_t>> added;                 // longest first
  std::vector<std::unique_ptr<Regex>> splits;  // applied in order (Isolated)
  bool nfc = false;
  bool add_prefix_space = false;
  bool ignore_merges = false;
  std::array<std::string, 256> alphabet = ByteAlphabet();
  std::array<uint32_t, 256> byte_id{};

  void Pieces(std::string_view text, std::vector<std::string_view>& out) const;
  void Bpe(std::string_view piece, std::vector<uint32_t>& out) const;
  void EncodePlain(std::string_view text, std::vector<uint32_t>& out) const;
};

namespace {

Result<std::unique_ptr<Regex>> Compile(const std::string& pattern) {
  int err = 0;
  PCRE2_SIZE off = 0;
  auto r = std::make_unique<Regex>();
  r->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                          PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  if (!r->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return InvalidArgument("tokenizer.json: regex does not compile (" +
                           std::string(reinterpret_cast<char*>(msg)) + "): " + pattern);
  }
  pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE);  // best effort
  return r;
}

Status AddPreTokenizer(const boost::json::object& p, BpeTokenizer::Impl& t);

}  // namespace

// Split `text` into pre-tokens: each regex in turn splits every piece so far; matches and
// the text between them are pieces (HF Split behavior "Isolated").
void BpeTokenizer::Impl::Pieces(std::string_view text, std::vector<std::string_view>& out) const {
  out.assign(1, text);
  std::vector<std::string_view> next;
  for (const auto& re : splits) {
    next.clear();
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re->code, nullptr);
    for (std::string_view piece : out) {
      size_t start = 0, last = 0;
      // The first call checks that the piece is valid UTF-8 (an invalid one is not split
      // and goes to BPE byte by byte); later calls skip that O(n) check.
      uint32_t flags = 0;
      while (start < piece.size()) {
        int rc = pcre2_match(re->code, reinterpret_cast<PCRE2_SPTR>(piece.data()), piece.size(),
                             start, flags, md, nullptr);
        if (rc < 0) break;
        flags = PCRE2_NO_UTF_CHECK;
        PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        if (ov[0] > last) next.push_back(piece.substr(last, ov[0] - last));
        if (ov[1] > ov[0]) next.push_back(piece.substr(ov[0], ov[1] - ov[0]));
        last = ov[1];
        start = ov[1] > ov[0] ? ov[1] : ov[1] + 1;
        while (start < piece.size() && (static_cast<uint8_t>(piece[start]) & 0xC0) == 0x80) ++start;
      }
      if (last < piece.size()) next.push_back(piece.substr(last));
    }
    pcre2_match_data_free(md);
    out.swap(next);
  }
}

// Byte-level BPE of one pre-token: start from its bytes' symbols, repeatedly merge the
// adjacent pair of lowest rank.
void BpeTokenizer::Impl::Bpe(std::string_view piece, std::vector<uint32_t>& out) const {
  if (ignore_merges) {
    std::string mapped;
    for (unsigned char c : piece) mapped += alphabet[c];
    auto it = vocab.find(mapped);
    if (it != vocab.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<uint32_t> sym;
  sym.reserve(piece.size());
  for (unsigned char c : piece) sym.push_back(byte_id[c]);
  while (sym.size() > 1) {
    uint32_t best_rank = std::numeric_limits<uint32_t>::max(), best_id = 0;
    size_t best = 0;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      auto it = merges.find((static_cast<uint64_t>(sym[i]) << 32) | sym[i + 1]);
      if (it != merges.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best_id = it->second.second;
        best = i;
      }
    }
    if (best_rank == std::numeric_limits<uint32_t>::max()) break;
    // Merge every occurrence of that pair, left to right (as tokenizers' word.merge_all
    // does for the lowest-rank pair).
    const uint32_t a = sym[best], b = sym[best + 1];
    size_t w = 0;
    for (size_t i = 0; i < sym.size(); ++i) {
      if (i + 1 < sym.size() && sym[i] == a && sym[i + 1] == b) {
        sym[w++] = best_id;
        ++i;
      } else {
        sym[w++] = sym[i];
      }
    }
    sym.resize(w);
  }
  out.insert(out.end(), sym.begin(), sym.end());
}

void BpeTokenizer::Impl::EncodePlain(std::string_view text, std::vector<uint32_t>& out) const {
  if (text.empty()) return;
  std::string normalized;
  if (nfc) {
    UErrorCode st = U_ZERO_ERROR;
    const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(st);
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(
        icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
    if (U_SUCCESS(st) && !n->isNormalized(u, st)) {
      icu::UnicodeString v = n->normalize(u, st);
      if (U_SUCCESS(st)) {
        v.toUTF8String(normalized);
        text = normalized;
      }
    }
  }
  std::string prefixed;
  if (add_prefix_space && text.front() != ' ') {
    prefixed = " " + std::string(text);
    text = prefixed;
  }
  std::vector<std::string_view> pieces;
  Pieces(text, pieces);
  for (std::string_view p : pieces) Bpe(p, out);
}

BpeTokenizer::BpeTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpeTokenizer::~BpeTokenizer() = default;
size_t BpeTokenizer::vocab_size() const { return impl_->vocab.size(); }

std::vector<uint32_t> BpeTokenizer::Encode(std::string_view text) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3 + 1);
  // Added tokens first: the earliest occurrence of any, the longest at a tie.
  while (!text.empty()) {
    size_t best = std::string_view::npos, len = 0;
    uint32_t id = 0;
    for (const auto& [s, tid] : impl_->added) {
      size_t at = text.find(s);
      if (at < best || (at == best && s.size() > len)) {
        best = at;
        len = s.size();
        id = tid;
      }
    }
    if (best == std::string_view::npos) break;
    impl_->EncodePlain(text.substr(0, best), out);
    out.push_back(id);
    text.remove_prefix(best + len);
  }
  impl_->EncodePlain(text, out);
  return out;
}

namespace {

Status AddNormalizer(const boost::json::value& n, BpeTokenizer::Impl& t) {
  if (n.is_null()) return Status::Ok();
  const auto& o = n.as_object();
  std::string type(o.at("type").as_string());
  if (type == "NFC") {
    t.nfc = true;
    return Status::Ok();
  }
  if (type == "Sequence") {
    for (const auto& m : o.at("normalizers").as_array())
      if (Status s = AddNormalizer(m, t); !s.ok()) return s;
    return Status::Ok();
  }
  return InvalidArgument("tokenizer.json: unsupported normalizer " + type);
}

Status AddPreTokenizer(const boost::json::object& p, BpeTokenizer::Impl& t) {
  std::string type(p.at("type").as_string());
  if (type == "Sequence") {
    for (const auto& m : p.at("pretokenizers").as_array())
      if (Status s = AddPreTokenizer(m.as_object(), t); !s.ok()) return s;
    return Status::Ok();
  }
  if (type == "ByteLevel") {
    if (const auto* a = p.if_contains("add_prefix_space")) t.add_prefix_space = a->as_bool();
    const auto* re = p.if_contains("use_regex");
    if (!re || re->as_bool()) {
      auto r = Compile(kGpt2Pattern);
      if (!r.ok()) return r.status();
      t.splits.push_back(std::move(*r));
    }
    return Status::Ok();
  }
  if (type == "Split") {
    const auto& pat = p.at("pattern").as_object();
    const auto* rx = pat.if_contains("Regex");
    if (!rx) return InvalidArgument("tokenizer.json: Split with a String pattern is not supported");
    if (p.at("behavior").as_string() != "Isolated")
      return InvalidArgument("tokenizer.json: Split behavior other than Isolated");
    if (const auto* inv = p.if_contains("invert"); inv && inv->as_bool())
      return InvalidArgument("tokenizer.json: inverted Split");
    auto r = Compile(std::string(rx->as_string()));
    if (!r.ok()) return r.status();
    t.splits.push_back(std::move(*r));
    return Status::Ok();
  }
  return InvalidArgument("tokenizer.json: unsupported pre_tokenizer " + type);
}

}  // namespace

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromJson(std::string_view json) {
  auto impl = std::make_unique<Impl>();
  try {
    auto doc = boost::json::parse(json).as_object();
    if (Status s = AddNormalizer(doc.at("normalizer"), *impl); !s.ok()) return s;
    const auto& pre = doc.at("pre_tokenizer");
    if (pre.is_null()) return InvalidArgument("tokenizer.json: no pre_tokenizer (not byte-level)");
    if (Status s = AddPreTokenizer(pre.as_object(), *impl); !s.ok()) return s;
    const auto& model = doc.at("model").as_object();
    if (model.at("type").as_string() != "BPE")
      return InvalidArgument("tokenizer.json: model is not BPE");
    if (const auto* d = model.if_contains("dropout"); d && !d->is_null())
      return InvalidArgument("tokenizer.json: BPE dropout is not supported");
    if (const auto* im = model.if_contains("ignore_merges"); im && im->is_bool())
      impl->ignore_merges = im->as_bool();
    for (const auto& [k, v] : model.at("vocab").as_object())
      impl->vocab.emplace(std::string(k), static_cast<uint32_t>(v.as_int64()));
    uint32_t rank = 0;
    for (const auto& m : model.at("merges").as_array()) {
      std::string a, b;
      if (m.is_string()) {
        std::string_view s = m.as_string();
        size_t sp = s.find(' ');
        if (sp == std::string_view::npos) return InvalidArgument("tokenizer.json: bad merge");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else {
        a = m.as_array().at(0).as_string();
        b = m.as_array().at(1).as_string();
      }
      auto ia = impl->vocab.find(a), ib = impl->vocab.find(b), im = impl->vocab.find(a + b);
      if (ia == impl->vocab.end() || ib == impl->vocab.end() || im == impl->vocab.end()) {
        ++rank;
        continue;
      }
      impl->merges.emplace((static_cast<uint64_t>(ia->second) << 32) | ib->second,
                           std::make_pair(rank++, im->second));
    }
    for (int c = 0; c < 256; ++c) {
      auto it = impl->vocab.find(impl->alphabet[c]);
      if (it == impl->vocab.end())
        return InvalidArgument("tokenizer.json: vocabulary lacks byte " + std::to_string(c) +
                               " (not a byte-level BPE)");
      impl->byte_id[c] = it->second;
    }
    if (const auto* added = doc.if_contains("added_tokens"))
      for (const auto& a : added->as_array()) {
        const auto& o = a.as_object();
        impl->added.emplace_back(std::string(o.at("content").as_string()),
                                 static_cast<uint32_t>(o.at("id").as_int64()));
      }
    std::stable_sort(impl->added.begin(), impl->added.end(),
                     [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("tokenizer.json: ") + e.what());
  }
  return std::unique_ptr<BpeTokenizer>(new BpeTokenizer(std::move(impl)));
}

namespace {
Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromFile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return FromJson(*text);
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::FromModelDir(const std::string& dir) {
  auto tok = FromFile(dir + "/tokenizer.json");
  if (!tok.ok()) return tok;
  auto config = ReadFile(dir + "/config.json");
  if (!config.ok()) return config.status();
  std::string model_type;
  try {
    model_type = std::string(boost::json::parse(*config).at("model_type").as_string());
  } catch (const std::exception& e) {
    return InvalidArgument(dir + "/config.json: no model_type: " + e.what());
  }
  if (model_type == "qwen2" || model_type == "qwen2_moe" || model_type == "qwen3" ||
      model_type == "qwen3_moe") {
    Impl& t = *(*tok)->impl_;
    auto re = Compile(kQwen2Pattern);
    if (!re.ok()) return re.status();
    t.nfc = true;
    t.add_prefix_space = false;
    t.splits.clear();
    t.splits.push_back(std::move(*re));
  }
  return tok;
}

}  // namespace kinference::tokenizer
