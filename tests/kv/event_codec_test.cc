#include "kv/event_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

namespace kinference::kv {
namespace {

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    if (hex[i] == '\n') break;
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(KV_FIXTURES_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return FromHex(ss.str());
}

// The batch make_frames.py writes, with hashes as ints or as 32-byte digests.
void ExpectFixtureBatch(const EventBatch& b, bool bytes) {
  const uint64_t big = 0xF123456789ABCDEFULL;
  // A digest's key is its last 8 bytes: 0x18..0x1e then the block index.
  auto h = [&](uint64_t i) { return bytes ? (0x18191a1b1c1d1e00ULL | i) : big - i; };
  EXPECT_DOUBLE_EQ(b.ts, 1764600000.25);
  ASSERT_TRUE(b.data_parallel_rank.has_value());
  EXPECT_EQ(*b.data_parallel_rank, 0);
  ASSERT_EQ(b.events.size(), 4u);
  const auto& s0 = std::get<BlockStored>(b.events[0]);
  EXPECT_EQ(s0.block_hashes, (std::vector<uint64_t>{h(0), h(1)}));
  EXPECT_FALSE(s0.parent_block_hash.has_value());
  EXPECT_EQ(s0.token_ids, (std::vector<uint32_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(s0.block_size, 4);
  EXPECT_EQ(s0.medium, std::optional<std::string>("GPU"));
  EXPECT_FALSE(s0.lora_id.has_value());
  const auto& s1 = std::get<BlockStored>(b.events[1]);
  EXPECT_EQ(s1.parent_block_hash, std::optional<uint64_t>(h(1)));
  EXPECT_EQ(s1.token_ids, (std::vector<uint32_t>{300, 70000, 9, 10}));
  EXPECT_EQ(std::get<BlockRemoved>(b.events[2]).block_hashes, (std::vector<uint64_t>{h(0)}));
  EXPECT_TRUE(std::holds_alternative<AllBlocksCleared>(b.events[3]));
  for (const auto& e : b.events) EXPECT_TRUE(IsEngineCacheEvent(e));
}

TEST(EventCodecTest, DecodesMsgspecMapEncodingWithIntHashes) {
  auto b = DecodeBatch(Fixture("batch_map_int.hex"));
  ASSERT_TRUE(b.ok()) << b.status().message();
  ExpectFixtureBatch(*b, false);
}

TEST(EventCodecTest, DecodesMsgspecMapEncodingWithByteHashes) {
  auto b = DecodeBatch(Fixture("batch_map_bytes.hex"));
  ASSERT_TRUE(b.ok()) << b.status().message();
  ExpectFixtureBatch(*b, true);
}

TEST(EventCodecTest, DecodesMsgspecArrayEncodingWithIntHashes) {
  auto b = DecodeBatch(Fixture("batch_array_int.hex"));
  ASSERT_TRUE(b.ok()) << b.status().message();
  ExpectFixtureBatch(*b, false);
}

TEST(EventCodecTest, DecodesMsgspecArrayEncodingWithByteHashes) {
  auto b = DecodeBatch(Fixture("batch_array_bytes.hex"));
  ASSERT_TRUE(b.ok()) << b.status().message();
  ExpectFixtureBatch(*b, true);
}

EventBatch Sample() {
  EventBatch b;
  b.ts = 12.5;
  b.data_parallel_rank = 0;
  BlockStored s;
  s.block_hashes = {0xFFFFFFFFFFFFFFFFULL, 7};
  s.token_ids = {1, 2, 70000, 4};
  s.block_size = 2;
  s.medium = "GPU";
  b.events.push_back(s);
  BlockStored t = s;
  t.block_hashes = {9};
  t.parent_block_hash = 7;
  t.token_ids = {5, 6};
  t.group_idx = 0;
  b.events.push_back(t);
  b.events.push_back(BlockRemoved{{7}, "GPU", std::nullopt});
  b.events.push_back(AllBlocksCleared{});
  return b;
}

TEST(EventCodecTest, EncodesWhatItDecodesInEveryEncoding) {
  for (auto ev : {EventEncoding::kMap, EventEncoding::kArray}) {
    for (auto hk : {HashEncoding::kInt, HashEncoding::kBytes}) {
      auto b = DecodeBatch(EncodeBatch(Sample(), ev, hk));
      ASSERT_TRUE(b.ok()) << b.status().message();
      ASSERT_EQ(b->events.size(), 4u);
      const auto& s = std::get<BlockStored>(b->events[0]);
      EXPECT_EQ(s.block_hashes, (std::vector<uint64_t>{0xFFFFFFFFFFFFFFFFULL, 7}));
      EXPECT_EQ(s.token_ids, (std::vector<uint32_t>{1, 2, 70000, 4}));
      const auto& t = std::get<BlockStored>(b->events[1]);
      EXPECT_EQ(t.parent_block_hash, std::optional<uint64_t>(7));
      EXPECT_EQ(t.group_idx, std::optional<int64_t>(0));
      EXPECT_EQ(std::get<BlockRemoved>(b->events[2]).block_hashes, std::vector<uint64_t>{7});
      EXPECT_TRUE(std::holds_alternative<AllBlocksCleared>(b->events[3]));
    }
  }
}

TEST(EventCodecTest, EncodingMatchesMsgspecByteForByte) {
  // make_frames.py's batch without kv_cache_spec_kind (a field not modelled here).
  for (auto [name, enc] : {std::pair{"batch_map_plain.hex", EventEncoding::kMap},
                           std::pair{"batch_array_plain.hex", EventEncoding::kArray}}) {
    std::string wire = Fixture(name);
    auto b = DecodeBatch(wire);
    ASSERT_TRUE(b.ok()) << b.status().message();
    ExpectFixtureBatch(*b, false);
    EXPECT_EQ(EncodeBatch(*b, enc), wire) << name;
  }
}

TEST(EventCodecTest, RejectsTruncatedAndMistypedPayloads) {
  std::string good = EncodeBatch(Sample());
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_FALSE(DecodeBatch(std::string_view(good).substr(0, n)).ok()) << n;
  EXPECT_FALSE(DecodeBatch(good + "x").ok());                         // trailing bytes
  EXPECT_FALSE(DecodeBatch(FromHex("93cb000000000000000000")).ok());  // short
  // [0.0, [{"type": "BlockMoved"}], nil]: unknown event type.
  auto unknown =
      DecodeBatch(FromHex("93cb000000000000000091"
                          "81a474797065aa426c6f636b4d6f766564"
                          "c0"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("BlockMoved"), std::string::npos);
  // ["BlockStored", [1], nil, [1, 2, 3], 2]: 3 tokens for 1 block of 2.
  auto bad =
      DecodeBatch(FromHex("93cb000000000000000091"
                          "95ab426c6f636b53746f726564"
                          "9101"
                          "c0"
                          "93010203"
                          "02"
                          "c0"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("token_ids"), std::string::npos);
}

// A map32 of 3.4e9 pairs in 5 bytes passes msgpuck's mp_check (its 2 * n wraps in 32 bits);
// the decoder must refuse it rather than read pairs past the payload (found by
// fuzz/kv_events_fuzz.cc; under make test-asan the exact-size buffer makes any such read
// fail the test).
TEST(EventCodecTest, RefusesContainerCountsLargerThanThePayload) {
  for (const char* hex : {"dfcd013ccc", "93cb000000000000000091dfcd013ccc"}) {
    std::string wire = FromHex(hex);
    std::unique_ptr<char[]> exact(new char[wire.size()]);
    std::memcpy(exact.get(), wire.data(), wire.size());
    auto b = DecodeBatch(std::string_view(exact.get(), wire.size()));
    ASSERT_FALSE(b.ok()) << hex;
    EXPECT_EQ(b.status().code(), kinference::ErrorCode::kInvalidArgument) << hex;
  }
  auto huge = DecodeBatch(FromHex("dfcd013ccc"));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("count exceeds the payload"), std::string::npos)
      << huge.status().message();
}

// The array encoding keeps a lora_name set without group_idx (it was dropped; found by
// fuzz/kv_events_fuzz.cc's round trip).
TEST(EventCodecTest, ArrayEncodingKeepsLoraNameWithoutGroupIdx) {
  BlockStored stored;
  stored.block_hashes = {7};
  stored.token_ids = {1, 2};
  stored.block_size = 2;
  stored.medium = "GPU";
  stored.lora_name = "adapter";
  EventBatch batch;
  batch.events.push_back(stored);
  for (auto enc : {EventEncoding::kArray, EventEncoding::kMap}) {
    auto back = DecodeBatch(EncodeBatch(batch, enc));
    ASSERT_TRUE(back.ok()) << back.status().message();
    ASSERT_EQ(back->events.size(), 1u);
    const auto& got = std::get<BlockStored>(back->events[0]);
    EXPECT_EQ(got.lora_name, std::optional<std::string>("adapter"));
    EXPECT_FALSE(got.group_idx.has_value());
  }
}

TEST(EventCodecTest, NonGpuMediumAndLoraAreNotTheEngineCache) {
  BlockStored s;
  s.block_hashes = {1};
  s.token_ids = {1};
  s.block_size = 1;
  s.medium = "CPU";
  EXPECT_FALSE(IsEngineCacheEvent(s));
  s.medium = "GPU";
  s.lora_name = "adapter";
  EXPECT_FALSE(IsEngineCacheEvent(s));
  EXPECT_TRUE(IsEngineCacheEvent(BlockRemoved{{1}, std::nullopt, std::nullopt}));
}

}  // namespace
}  // namespace kinference::kv
