#include "kv/block_hash.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

namespace kinference::kv {
namespace {

// Pickle opcodes (CPython Lib/pickle.py).
constexpr char kProto = '\x80';
constexpr char kFrame = '\x95';
constexpr char kShortBinBytes = 'C';
constexpr char kShortBinUnicode = '\x8c';
constexpr char kBinUnicode = 'X';
constexpr char kMemoize = '\x94';
constexpr char kMark = '(';
constexpr char kTuple = 't';
constexpr char kTuple1 = '\x85';
constexpr char kTuple2 = '\x86';
constexpr char kTuple3 = '\x87';
constexpr char kBinInt1 = 'K';
constexpr char kBinInt2 = 'M';
constexpr char kBinInt = 'J';
constexpr char kNone = 'N';
constexpr char kStop = '.';
constexpr size_t kFrameHeader = 9;   // FRAME + 8-byte little-endian length
constexpr size_t kFrameSizeMin = 4;  // _pickle.c FRAME_SIZE_MIN: smaller frames are unframed
constexpr size_t kTupleCodes = 3;    // TUPLE1..TUPLE3 for up to 3 elements (protocol >= 2)

void PutLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Writes the smallest pickle int opcode for `v` at `w`; returns the end of what it wrote.
char* PutInt(char* w, TokenId v) {
  int bytes = 4;
  if (v <= 0xff) {
    *w++ = kBinInt1;
    bytes = 1;
  } else if (v <= 0xffff) {
    *w++ = kBinInt2;
    bytes = 2;
  } else {  // token ids are below 2^31: BININT (4-byte signed little-endian)
    *w++ = kBinInt;
  }
  for (int i = 0; i < bytes; ++i) *w++ = static_cast<char>((v >> (8 * i)) & 0xff);
  return w;
}

void PutStr(std::string& out, std::string_view s) {
  if (s.size() < 256) {
    out.push_back(kShortBinUnicode);
    PutLe(out, s.size(), 1);
  } else {
    out.push_back(kBinUnicode);
    PutLe(out, s.size(), 4);
  }
  out.append(s);
  out.push_back(kMemoize);
}

// Opens a protocol-5 pickle whose body the caller appends; Close() sets the frame.
std::string Open() {
  std::string out;
  out.push_back(kProto);
  out.push_back('\x05');
  out.append(kFrameHeader, '\0');
  return out;
}

std::string Close(std::string out) {
  out.push_back(kStop);
  const size_t body = out.size() - 2 - kFrameHeader;
  if (body < kFrameSizeMin) {
    out.erase(2, kFrameHeader);
    return out;
  }
  // Bodies here stay far below _pickle.c's FRAME_SIZE_TARGET (64 KiB): one frame.
  std::string len;
  PutLe(len, body, 8);
  out[2] = kFrame;
  out.replace(3, 8, len);
  return out;
}

Digest Sha256(std::string_view bytes) {
  // The digest's implementation is fetched once: OpenSSL 3's one-shot SHA256() fetches it
  // on every call, which was a quarter of the cost of hashing a block (measured in the
  // simulator: EVP_MD_fetch 7% of its time).
  static EVP_MD* const kSha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  Digest d;
  if (kSha256 == nullptr ||
      EVP_Digest(bytes.data(), bytes.size(), d.data(), nullptr, kSha256, nullptr) != 1)
    SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), d.data());
  return d;
}

}  // namespace

uint64_t ExternalKey(const Digest& digest) {
  uint64_t v = 0;
  for (size_t i = digest.size() - 8; i < digest.size(); ++i) v = (v << 8) | digest[i];
  return v;
}

std::string PickleStr(std::string_view s) {
  std::string out = Open();
  PutStr(out, s);
  return Close(std::move(out));
}

std::string PickleBlockKey(const Digest& parent, std::span<const TokenId> tokens,
                           std::string_view cache_salt) {
  std::string out = Open();
  out.reserve(out.size() + 40 + tokens.size() * 5 + cache_salt.size());
  out.push_back(kShortBinBytes);
  PutLe(out, parent.size(), 1);
  out.append(reinterpret_cast<const char*>(parent.data()), parent.size());
  out.push_back(kMemoize);
  if (tokens.empty()) {
    out.push_back(')');  // EMPTY_TUPLE (not memoized)
  } else {
    if (tokens.size() > kTupleCodes) out.push_back(kMark);
    // At most 5 bytes per id (BININT); written through a pointer, then trimmed.
    size_t at = out.size();
    out.resize(at + tokens.size() * 5);
    char* w = out.data() + at;
    for (TokenId t : tokens) w = PutInt(w, t);
    out.resize(static_cast<size_t>(w - out.data()));
    out.push_back(tokens.size() > kTupleCodes
                      ? kTuple
                      : static_cast<char>(kTuple1 + static_cast<char>(tokens.size() - 1)));
    out.push_back(kMemoize);
  }
  if (cache_salt.empty()) {
    out.push_back(kNone);
  } else {  // (("cache_salt", salt),)
    PutStr(out, "cache_salt");
    PutStr(out, cache_salt);
    out.push_back(kTuple2);
    out.push_back(kMemoize);
    out.push_back(kTuple1);
    out.push_back(kMemoize);
  }
  out.push_back(kTuple3);
  out.push_back(kMemoize);
  return Close(std::move(out));
}

BlockHasher::BlockHasher(std::string_view none_hash_seed)
    : none_hash_(Sha256(PickleStr(none_hash_seed))) {}

Digest BlockHasher::HashBlock(const Digest* parent, std::span<const TokenId> tokens,
                              std::string_view cache_salt) const {
  return Sha256(PickleBlockKey(parent ? *parent : none_hash_, tokens, cache_salt));
}

std::vector<Digest> BlockHasher::HashBlocks(std::span<const TokenId> tokens, int block_size,
                                            std::string_view cache_salt) const {
  std::vector<Digest> out;
  if (block_size <= 0) return out;
  const size_t b = static_cast<size_t>(block_size);
  out.reserve(tokens.size() / b);
  for (size_t i = 0; (i + 1) * b <= tokens.size(); ++i) {
    out.push_back(HashBlock(i == 0 ? nullptr : &out.back(), tokens.subspan(i * b, b),
                            i == 0 ? cache_salt : std::string_view{}));
  }
  return out;
}

std::vector<uint64_t> BlockHasher::BlockKeys(std::span<const TokenId> tokens, int block_size,
                                             std::string_view cache_salt) const {
  std::vector<uint64_t> keys;
  for (const Digest& d : HashBlocks(tokens, block_size, cache_salt)) keys.push_back(ExternalKey(d));
  return keys;
}

}  // namespace kinference::kv
