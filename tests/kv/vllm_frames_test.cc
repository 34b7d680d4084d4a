// KV events captured from real vLLM 0.32 (CPU build, the tiny Qwen2 model of
// scripts/vllm-env.sh, block size 128; tests/kv/fixtures/capture_vllm.py): they decode,
// in both hash kinds, and their block hashes are what kv::BlockHasher computes from the
// prompt token ids vLLM's /tokenize returned for the same chat messages.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <set>
#include <sstream>

#include "kv/block_hash.h"
#include "kv/event_codec.h"

namespace kinference::kv {
namespace {

constexpr int kBlockSize = 128;  // vLLM's default on CPU

struct Frame {
  std::string source;
  uint64_t seq;
  std::string payload;
};

std::string Read(const std::string& name) {
  std::ifstream in(std::string(KV_FIXTURES_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<Frame> Frames(const std::string& name) {
  std::vector<Frame> out;
  std::istringstream in(Read(name));
  std::string src, hex;
  uint64_t seq;
  while (in >> src >> seq >> hex) {
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
      bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    out.push_back({src, seq, bytes});
  }
  return out;
}

struct Capture {
  std::vector<EventBatch> live;                  // live batches, in sequence order
  std::set<uint64_t> stored;                     // every BlockStored hash
  std::vector<std::vector<uint32_t>> token_ids;  // per request, from /tokenize
  std::vector<int> cached_tokens;                // per request, usage
};

Capture Load(const std::string& prefix) {
  Capture c;
  std::map<uint64_t, std::string> live, replayed;
  for (const Frame& f : Frames(prefix + "_frames.txt")) {
    auto b = DecodeBatch(f.payload);
    EXPECT_TRUE(b.ok()) << prefix << " seq " << f.seq << ": " << b.status().message();
    if (!b.ok()) continue;
    (f.source == "live" ? live : replayed)[f.seq] = f.payload;
    for (const KvEvent& e : b->events) {
      EXPECT_TRUE(IsEngineCacheEvent(e));
      if (const auto* s = std::get_if<BlockStored>(&e)) {
        EXPECT_EQ(s->block_size, kBlockSize);
        EXPECT_EQ(s->medium, std::optional<std::string>("GPU"));
        c.stored.insert(s->block_hashes.begin(), s->block_hashes.end());
      }
    }
  }
  // The replay socket serves the very bytes that were published.
  for (const auto& [seq, payload] : live) {
    auto it = replayed.find(seq);
    if (it != replayed.end()) EXPECT_EQ(it->second, payload) << "seq " << seq;
    c.live.push_back(*DecodeBatch(payload));
  }
  EXPECT_FALSE(live.empty());
  // The same requests went to both instances (capture_vllm.py); one copy is kept.
  auto doc = boost::json::parse(Read("vllm032_requests.json")).as_array();
  for (const auto& r : doc) {
    std::vector<uint32_t> ids;
    for (const auto& t : r.at("token_ids").as_array())
      ids.push_back(static_cast<uint32_t>(t.as_int64()));
    c.token_ids.push_back(std::move(ids));
    const auto& details = r.at("usage").at("prompt_tokens_details");
    c.cached_tokens.push_back(
        details.is_null() ? 0 : static_cast<int>(details.at("cached_tokens").as_int64()));
  }
  return c;
}

void ExpectPromptBlocksPublished(const Capture& c, const char* kind) {
  BlockHasher hasher;
  ASSERT_FALSE(c.token_ids.empty());
  for (size_t r = 0; r < c.token_ids.size(); ++r) {
    std::vector<uint64_t> keys = hasher.BlockKeys(c.token_ids[r], kBlockSize);
    ASSERT_FALSE(keys.empty()) << kind << " request " << r << " is shorter than a block";
    for (size_t k = 0; k < keys.size(); ++k)
      EXPECT_TRUE(c.stored.count(keys[k])) << kind << " request " << r << " block " << k;
  }
}

TEST(VllmFramesTest, IntHashesAreTheSha256ChainOfTheTokenizedPrompt) {
  Capture c = Load("vllm032_int");
  ExpectPromptBlocksPublished(c, "int");
}

TEST(VllmFramesTest, ByteHashesGiveTheSameKeys) {
  Capture c = Load("vllm032_bytes");
  ExpectPromptBlocksPublished(c, "bytes");
}

TEST(VllmFramesTest, RepeatedPrefixIsAHitOfTheMatchedBlocks) {
  Capture c = Load("vllm032_int");
  ASSERT_GE(c.token_ids.size(), 4u);
  // Requests 2 and 3 share a long system prompt: the second's cached tokens are the
  // whole blocks both prompts share, which the first one's BlockStored events named.
  BlockHasher hasher;
  auto a = hasher.BlockKeys(c.token_ids[2], kBlockSize);
  auto b = hasher.BlockKeys(c.token_ids[3], kBlockSize);
  size_t shared = 0;
  while (shared < a.size() && shared < b.size() && a[shared] == b[shared]) ++shared;
  ASSERT_GT(shared, 0u);
  EXPECT_EQ(c.cached_tokens[3], static_cast<int>(shared) * kBlockSize);
}

}  // namespace
}  // namespace kinference::kv
