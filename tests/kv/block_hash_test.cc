#include "kv/block_hash.h"

#include <gtest/gtest.h>

#include <vector>

namespace kinference::kv {
namespace {

// Expected values: vLLM 0.32's own functions (vllm.v1.core.kv_cache_utils
// init_none_hash + hash_block_tokens + maybe_convert_block_hash with
// vllm.utils.hashing.sha256), run in the vLLM venv of scripts/vllm-env.sh on these tokens.
const std::vector<TokenId> kTokens = {1, 255, 256, 65535, 65536, 151643, 7, 0, 42, 100000, 3, 2};

std::string Hex(const Digest& d) {
  static const char* k = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += k[b >> 4];
    s += k[b & 15];
  }
  return s;
}

TEST(BlockHashTest, NoneHashIsSha256OfPickledDefaultSeed) {
  BlockHasher h;
  EXPECT_EQ(Hex(h.none_hash()), "066b1e8987e027138e98701c46128929378935f9b6cd1549105ae6b4f0d71198");
}

TEST(BlockHashTest, PickleBytesMatchCPython) {
  // pickle.dumps('vllm-none-hash', protocol=5).hex()
  std::string p = PickleStr("vllm-none-hash");
  std::string hex;
  for (char c : p) {
    static const char* k = "0123456789abcdef";
    hex += k[static_cast<uint8_t>(c) >> 4];
    hex += k[static_cast<uint8_t>(c) & 15];
  }
  EXPECT_EQ(hex, "80059512000000000000008c0e766c6c6d2d6e6f6e652d68617368942e");
}

TEST(BlockHashTest, ChainedKeysMatchVllmForEveryIntWidth) {
  BlockHasher h;
  EXPECT_EQ(h.BlockKeys(kTokens, 4),
            (std::vector<uint64_t>{1991969128899042097ULL, 7598616187730340881ULL,
                                   12743815126566516837ULL}));
  // Blocks of 3 tokens pickle as TUPLE3 rather than MARK ... TUPLE.
  EXPECT_EQ(h.BlockKeys(kTokens, 3),
            (std::vector<uint64_t>{17886795291088986457ULL, 10681761185891097160ULL,
                                   17006502409019618725ULL, 2628293455699282994ULL}));
}

TEST(BlockHashTest, FirstDigestAndPartialBlockDropped) {
  BlockHasher h;
  auto d = h.HashBlocks(std::span(kTokens).first(6), 4);
  ASSERT_EQ(d.size(), 1u);  // the last 2 tokens are not a full block
  EXPECT_EQ(Hex(d[0]), "64b05b8b7de237b04310cce9899c2c3b4100aeafbf1bb53c1ba4e55e6b925b31");
  EXPECT_EQ(ExternalKey(d[0]), 1991969128899042097ULL);
}

TEST(BlockHashTest, CacheSaltEntersTheFirstBlockOnly) {
  BlockHasher h;
  auto salted = h.BlockKeys(kTokens, 4, "tenant-a");
  EXPECT_EQ(salted, (std::vector<uint64_t>{14165609406667015346ULL, 40825281052848460ULL,
                                           11765640274133736500ULL}));
}

TEST(BlockHashTest, PythonHashSeedChangesTheChain) {
  // PYTHONHASHSEED=0: NONE_HASH = sha256(pickle('0')).
  BlockHasher h("0");
  EXPECT_EQ(Hex(h.none_hash()), "1973e23848344dc43a988a9b478663803cfffe1243480253f9a3cf004b14aa7c");
  EXPECT_EQ(h.BlockKeys(kTokens, 4),
            (std::vector<uint64_t>{14097476592862207720ULL, 9664427167866940954ULL,
                                   17031035815835565010ULL}));
}

TEST(BlockHashTest, LongBlocksOfLargeIds) {
  std::vector<TokenId> t;
  for (int i = 0; i < 300; ++i) t.push_back(static_cast<TokenId>((i * 7919) % 152000));
  BlockHasher h;
  EXPECT_EQ(h.BlockKeys(t, 128),
            (std::vector<uint64_t>{3454490264622050646ULL, 1662356851324105387ULL}));
  EXPECT_TRUE(h.BlockKeys(t, 0).empty());
}

}  // namespace
}  // namespace kinference::kv
