// Block hashing exactly as vLLM's prefix cache does it with `--prefix-caching-hash-algo
// sha256` (vLLM's default, the one vllm:cache_config_info reports on real vLLM 0.32, see
// shared/notes/real-vllm-cpu.md), so that the router can compute, from a request's token
// ids, the keys that vLLM's KV events (BlockStored / BlockRemoved) name.
//
// What is reproduced (vllm/v1/core/kv_cache_utils.py and vllm/utils/hashing.py):
//   sha256(x)        = SHA-256 of pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL) (5)
//   NONE_HASH        = sha256(seed), seed the str PYTHONHASHSEED when set, else
//                      "vllm-none-hash" (DEFAULT_NONE_HASH_SEED: releases since late 2025;
//                      earlier ones used os.urandom(32) without PYTHONHASHSEED, and then no
//                      outside party can reproduce the hashes)
//   hash_block_tokens(parent, tokens, extra_keys)
//                    = sha256((parent or NONE_HASH, tuple(tokens), extra_keys))
//   block i of a request covers tokens [i*B, (i+1)*B); only full blocks are hashed; the
//   parent of block 0 is NONE_HASH, of block i the 32-byte hash of block i-1.
//   maybe_convert_block_hash: with VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES (the default) a
//   KV event carries int.from_bytes(hash, "big") & (2^64 - 1), i.e. the digest's last
//   8 bytes read big-endian; otherwise the 32 bytes themselves. ExternalKey() gives the
//   former for either, and is the key of the router's precise index.
// extra_keys: None (no LoRA, no multimodal input, no prompt embeddings), or for
// `cache_salt` requests (("cache_salt", salt),) on block 0 only (vLLM 0.32's
// generate_block_hash_extra_keys; releases before it used (salt,)). LoRA, multimodal
// and prompt-embedding keys are not reproduced.
// The pickle bytes written are those of CPython's C pickler for these shapes: PROTO 5,
// one FRAME, SHORT_BINBYTES/BINUNICODE with MEMOIZE, MARK ... TUPLE for the token tuple
// (TUPLE1-3 up to 3 tokens), BININT1/BININT2/BININT for the ints, NONE, TUPLE3, STOP.
// Checked against Python's pickle + hashlib and against hashes captured from real vLLM
// (tests/kv/block_hash_test.cc).
//
// Units: tokens. Thread-safety: pure functions and immutable objects; safe from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kinference::kv {

using TokenId = uint32_t;
using Digest = std::array<uint8_t, 32>;

// vLLM's default NONE_HASH seed for sha256 (kv_cache_utils.py DEFAULT_NONE_HASH_SEED).
inline constexpr std::string_view kDefaultNoneHashSeed = "vllm-none-hash";

// The 64-bit key a KV event carries for `digest` (its last 8 bytes, big-endian).
uint64_t ExternalKey(const Digest& digest);

// Hashes blocks of token ids the way one vLLM deployment does.
class BlockHasher {
 public:
  // `none_hash_seed`: PYTHONHASHSEED of the vLLM processes when they set it.
  explicit BlockHasher(std::string_view none_hash_seed = kDefaultNoneHashSeed);

  const Digest& none_hash() const { return none_hash_; }
  // hash_block_tokens(parent (nullptr: NONE_HASH), tokens, extra_keys) where extra_keys
  // is None when `cache_salt` is empty, else (("cache_salt", cache_salt),).
  Digest HashBlock(const Digest* parent, std::span<const TokenId> tokens,
                   std::string_view cache_salt = {}) const;
  // Digests of the full blocks of `tokens` (block_size > 0), chained from NONE_HASH;
  // `cache_salt` enters block 0 only, as in vLLM.
  std::vector<Digest> HashBlocks(std::span<const TokenId> tokens, int block_size,
                                 std::string_view cache_salt = {}) const;
  // ExternalKey of each of HashBlocks: the keys KV events name.
  std::vector<uint64_t> BlockKeys(std::span<const TokenId> tokens, int block_size,
                                  std::string_view cache_salt = {}) const;

 private:
  Digest none_hash_;
};

// pickle.dumps(value, protocol=5) for the shapes above (exposed for tests).
std::string PickleStr(std::string_view s);
std::string PickleBlockKey(const Digest& parent, std::span<const TokenId> tokens,
                           std::string_view cache_salt);

}  // namespace kinference::kv
