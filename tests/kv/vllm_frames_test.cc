// KV events captured from real vLLM (CPU builds, the tiny Qwen2 model of
// scripts/vllm-env.sh):
// - vLLM 0.32 (map-encoded events; tests/kv/fixtures/capture_vllm.py, block size 128):
//   they decode, in both hash kinds, and their block hashes are what kv::BlockHasher
//   computes from the prompt token ids vLLM's /tokenize returned for the same chat messages.
// - vLLM 0.23.0, the newest release with positional-array events
//   (tests/kv/fixtures/capture_vllm_array.py): BlockStored, BlockRemoved (evictions from a
//   24-block cache) and AllBlocksCleared (/reset_prefix_cache), in both hash kinds; checked
//   against the token ids, block size and cached tokens the capture recorded.
#include <gtest/gtest.h>
#include <msgpuck.h>

#include <boost/json.hpp>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <variant>

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
    if (it != replayed.end()) {
      EXPECT_EQ(it->second, payload) << "seq " << seq;
    }
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

// ---- vLLM 0.23.0: positional-array events (capture_vllm_array.py) ----

struct Step {
  bool reset = false;               // POST /reset_prefix_cache; else a completion request
  uint64_t next_seq = 0;            // live batches received before the step
  std::vector<uint32_t> token_ids;  // the prompt, from /tokenize
  int cached_tokens = 0;            // usage.prompt_tokens_details.cached_tokens
  int64_t status = 0;               // the reset's HTTP status
};

struct ArrayCapture {
  std::string version;
  int block_size = 0;
  bool int_hashes = false;
  std::string none_hash_seed;  // PYTHONHASHSEED of the capture (0.23.0 has no fixed default)
  std::vector<Step> steps;
  std::vector<std::string> live;  // payloads, index = sequence number
  std::map<uint64_t, std::string> replayed;
};

ArrayCapture LoadArray(const std::string& prefix) {
  ArrayCapture c;
  auto doc = boost::json::parse(Read(prefix + "_capture.json")).as_object();
  c.version = std::string(doc.at("vllm_version").as_string());
  c.block_size = static_cast<int>(doc.at("block_size").as_int64());
  c.int_hashes = doc.at("int_block_hashes").as_bool();
  c.none_hash_seed = std::string(doc.at("none_hash_seed").as_string());
  for (const auto& v : doc.at("steps").as_array()) {
    const auto& o = v.as_object();
    Step s;
    s.reset = o.at("action").as_string() == "reset_prefix_cache";
    s.next_seq = static_cast<uint64_t>(o.at("next_seq").as_int64());
    if (s.reset) {
      s.status = o.at("status").as_int64();
    } else {
      for (const auto& t : o.at("token_ids").as_array())
        s.token_ids.push_back(static_cast<uint32_t>(t.as_int64()));
      const auto& details = o.at("usage").at("prompt_tokens_details");
      s.cached_tokens =
          details.is_null() ? 0 : static_cast<int>(details.at("cached_tokens").as_int64());
    }
    c.steps.push_back(std::move(s));
  }
  std::map<uint64_t, std::string> live;
  for (const Frame& f : Frames(prefix + "_frames.txt"))
    (f.source == "live" ? live : c.replayed)[f.seq] = f.payload;
  // The subscriber saw every batch: sequence numbers 0, 1, 2... without a gap.
  for (const auto& [seq, payload] : live) {
    EXPECT_EQ(seq, c.live.size()) << prefix << ": live batch missing";
    c.live.push_back(payload);
  }
  return c;
}

// The digests of every full block of every request's prompt, by external key, and where
// each key occurs first: (step, block index).
struct PromptBlocks {
  std::map<uint64_t, Digest> digest;
  std::map<uint64_t, std::pair<size_t, size_t>> where;
};

PromptBlocks HashPrompts(const ArrayCapture& c) {
  PromptBlocks p;
  BlockHasher hasher(c.none_hash_seed);
  for (size_t i = 0; i < c.steps.size(); ++i) {
    std::vector<Digest> d = hasher.HashBlocks(c.steps[i].token_ids, c.block_size);
    for (size_t k = 0; k < d.size(); ++k) {
      p.digest.emplace(ExternalKey(d[k]), d[k]);
      p.where.emplace(ExternalKey(d[k]), std::make_pair(i, k));
    }
  }
  return p;
}

// Walks the raw msgpack of a batch (which DecodeBatch has accepted) and checks what the
// decoder cannot show: each event is a positional array whose first element is its type's
// name, and each block hash is a uint (int kind) or the 32-byte digest vLLM hashed.
void ExpectPositionalArrays(const std::string& payload, const EventBatch& batch, bool int_hashes,
                            const PromptBlocks& blocks, uint64_t seq) {
  const char* p = payload.data();
  ASSERT_EQ(mp_typeof(*p), MP_ARRAY) << "seq " << seq;
  ASSERT_GE(mp_decode_array(&p), 2u);
  mp_next(&p);  // ts
  ASSERT_EQ(mp_typeof(*p), MP_ARRAY);
  uint32_t n = mp_decode_array(&p);
  ASSERT_EQ(n, batch.events.size());
  for (uint32_t i = 0; i < n; ++i) {
    const char* next = p;
    mp_next(&next);
    ASSERT_EQ(mp_typeof(*p), MP_ARRAY) << "seq " << seq << " event " << i << " is not an array";
    uint32_t fields = mp_decode_array(&p);
    ASSERT_GE(fields, 1u);
    ASSERT_EQ(mp_typeof(*p), MP_STR);
    uint32_t len = 0;
    const char* tag = mp_decode_str(&p, &len);
    const char* type = std::holds_alternative<BlockStored>(batch.events[i])    ? "BlockStored"
                       : std::holds_alternative<BlockRemoved>(batch.events[i]) ? "BlockRemoved"
                                                                               : "AllBlocksCleared";
    EXPECT_EQ(std::string_view(tag, len), type) << "seq " << seq << " event " << i;
    if (fields > 1) {  // BlockStored and BlockRemoved: block_hashes first
      ASSERT_EQ(mp_typeof(*p), MP_ARRAY);
      uint32_t hashes = mp_decode_array(&p);
      for (uint32_t h = 0; h < hashes; ++h) {
        if (int_hashes) {
          ASSERT_EQ(mp_typeof(*p), MP_UINT) << "seq " << seq << " event " << i;
          mp_next(&p);
          continue;
        }
        ASSERT_EQ(mp_typeof(*p), MP_BIN) << "seq " << seq << " event " << i;
        uint32_t size = 0;
        const char* bytes = mp_decode_bin(&p, &size);
        ASSERT_EQ(size, 32u);
        Digest d;
        std::memcpy(d.data(), bytes, 32);
        auto it = blocks.digest.find(ExternalKey(d));
        ASSERT_NE(it, blocks.digest.end()) << "seq " << seq << ": a digest of no prompt block";
        EXPECT_EQ(it->second, d) << "seq " << seq << " event " << i;
      }
    }
    p = next;
  }
}

void ExpectArrayCaptureDecodes(const std::string& prefix, bool int_hashes) {
  ArrayCapture c = LoadArray(prefix);
  EXPECT_EQ(c.version, "0.23.0");
  EXPECT_EQ(c.int_hashes, int_hashes);
  ASSERT_GT(c.block_size, 0);
  ASSERT_FALSE(c.live.empty());
  PromptBlocks blocks = HashPrompts(c);
  int stored = 0, removed = 0, cleared = 0;
  for (uint64_t seq = 0; seq < c.live.size(); ++seq) {
    auto b = DecodeBatch(c.live[seq]);
    ASSERT_TRUE(b.ok()) << prefix << " seq " << seq << ": " << b.status().message();
    EXPECT_EQ(b->data_parallel_rank, std::optional<int64_t>(0));
    ExpectPositionalArrays(c.live[seq], *b, int_hashes, blocks, seq);
    for (const KvEvent& e : b->events) {
      EXPECT_TRUE(IsEngineCacheEvent(e));
      stored += std::holds_alternative<BlockStored>(e);
      removed += std::holds_alternative<BlockRemoved>(e);
      cleared += std::holds_alternative<AllBlocksCleared>(e);
    }
    // The replay socket serves the very bytes that were published.
    auto it = c.replayed.find(seq);
    ASSERT_NE(it, c.replayed.end()) << "seq " << seq << " not replayed";
    EXPECT_EQ(it->second, c.live[seq]) << "seq " << seq;
  }
  EXPECT_GT(stored, 0);
  EXPECT_GT(removed, 0);
  EXPECT_GT(cleared, 0);
}

TEST(VllmArrayFramesTest, Vllm023IntHashArraysDecode) {
  ExpectArrayCaptureDecodes("vllm023_array_int", true);
}

TEST(VllmArrayFramesTest, Vllm023ByteHashArraysDecodeAndCarryTheWholeDigest) {
  ExpectArrayCaptureDecodes("vllm023_array_bytes", false);
}

// The same steps on an instance with 32-byte digests: the same events with the same keys.
TEST(VllmArrayFramesTest, Vllm023ByteHashesGiveTheIntHashesKeys) {
  ArrayCapture ints = LoadArray("vllm023_array_int");
  ArrayCapture bytes = LoadArray("vllm023_array_bytes");
  ASSERT_EQ(ints.live.size(), bytes.live.size());
  auto shape = [](const KvEvent& e) {
    std::vector<uint64_t> v{e.index()};
    if (const auto* s = std::get_if<BlockStored>(&e)) {
      v.insert(v.end(), s->block_hashes.begin(), s->block_hashes.end());
      v.push_back(s->parent_block_hash.value_or(0));
    } else if (const auto* r = std::get_if<BlockRemoved>(&e)) {
      v.insert(v.end(), r->block_hashes.begin(), r->block_hashes.end());
    }
    return v;
  };
  for (size_t seq = 0; seq < ints.live.size(); ++seq) {
    auto a = DecodeBatch(ints.live[seq]);
    auto b = DecodeBatch(bytes.live[seq]);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->events.size(), b->events.size()) << "seq " << seq;
    for (size_t i = 0; i < a->events.size(); ++i)
      EXPECT_EQ(shape(a->events[i]), shape(b->events[i])) << "seq " << seq << " event " << i;
  }
}

// Every stored block is a full block of a prompt the capture sent: its hash is the sha256
// chain of that prompt's tokens, its parent the previous block's hash (none for block 0),
// its token ids that block's slice of the /tokenize answer; and every full prompt block
// was stored.
void ExpectStoredBlocksAreThePrompts(const std::string& prefix) {
  ArrayCapture c = LoadArray(prefix);
  PromptBlocks blocks = HashPrompts(c);
  BlockHasher hasher(c.none_hash_seed);
  std::set<uint64_t> stored;
  for (uint64_t seq = 0; seq < c.live.size(); ++seq) {
    auto b = DecodeBatch(c.live[seq]);
    ASSERT_TRUE(b.ok());
    for (const KvEvent& e : b->events) {
      const auto* s = std::get_if<BlockStored>(&e);
      if (!s) continue;
      EXPECT_EQ(s->block_size, c.block_size);
      EXPECT_EQ(s->medium, std::optional<std::string>("GPU"));
      for (size_t j = 0; j < s->block_hashes.size(); ++j) {
        auto it = blocks.where.find(s->block_hashes[j]);
        ASSERT_NE(it, blocks.where.end()) << "seq " << seq << ": block of no prompt";
        auto [step, k] = it->second;
        const std::vector<uint32_t>& ids = c.steps[step].token_ids;
        std::vector<uint32_t> want(ids.begin() + k * c.block_size,
                                   ids.begin() + (k + 1) * c.block_size);
        std::vector<uint32_t> got(s->token_ids.begin() + j * c.block_size,
                                  s->token_ids.begin() + (j + 1) * c.block_size);
        EXPECT_EQ(got, want) << "seq " << seq << " block " << j;
        std::optional<uint64_t> parent =
            j == 0 ? s->parent_block_hash : std::optional<uint64_t>(s->block_hashes[j - 1]);
        std::optional<uint64_t> want_parent;
        if (k > 0) want_parent = hasher.BlockKeys(ids, c.block_size)[k - 1];
        EXPECT_EQ(parent, want_parent) << "seq " << seq << " block " << j;
        stored.insert(s->block_hashes[j]);
      }
    }
  }
  for (size_t i = 0; i < c.steps.size(); ++i)
    for (uint64_t key : hasher.BlockKeys(c.steps[i].token_ids, c.block_size))
      EXPECT_TRUE(stored.count(key)) << "step " << i << ": a full prompt block never stored";
}

TEST(VllmArrayFramesTest, Vllm023StoredBlocksAreTheTokenizedPromptsBlocks) {
  ExpectStoredBlocksAreThePrompts("vllm023_array_int");
  ExpectStoredBlocksAreThePrompts("vllm023_array_bytes");
}

// Following the events in order, the blocks the index holds before each request give the
// cached tokens vLLM reported for it: the leading prompt blocks held, capped so that the
// last prompt token is computed (vLLM's max_cache_hit_length). Each BlockRemoved names a
// block held; the reset's AllBlocksCleared opens the next batch.
void ExpectEventsPredictCachedTokens(const std::string& prefix) {
  ArrayCapture c = LoadArray(prefix);
  BlockHasher hasher(c.none_hash_seed);
  std::set<uint64_t> held;
  uint64_t applied = 0;  // batches applied
  auto apply_until = [&](uint64_t seq) {
    for (; applied < seq && applied < c.live.size(); ++applied) {
      auto b = DecodeBatch(c.live[applied]);
      ASSERT_TRUE(b.ok());
      for (const KvEvent& e : b->events) {
        if (const auto* s = std::get_if<BlockStored>(&e)) {
          held.insert(s->block_hashes.begin(), s->block_hashes.end());
        } else if (const auto* r = std::get_if<BlockRemoved>(&e)) {
          for (uint64_t h : r->block_hashes)
            EXPECT_EQ(held.erase(h), 1u) << "seq " << applied << ": removed a block not held";
        } else {
          held.clear();
        }
      }
    }
  };
  int hits = 0, resets = 0;
  for (size_t i = 0; i < c.steps.size(); ++i) {
    const Step& s = c.steps[i];
    apply_until(s.next_seq);
    if (s.reset) {
      EXPECT_EQ(s.status, 200);
      ASSERT_LT(s.next_seq, c.live.size()) << "no batch after the reset";
      auto b = DecodeBatch(c.live[s.next_seq]);
      ASSERT_TRUE(b.ok());
      ASSERT_FALSE(b->events.empty());
      EXPECT_TRUE(std::holds_alternative<AllBlocksCleared>(b->events.front()));
      held.clear();  // that event: the engine's cache emptied at the reset
      ++resets;
      continue;
    }
    std::vector<uint64_t> keys = hasher.BlockKeys(s.token_ids, c.block_size);
    size_t cap = (s.token_ids.size() - 1) / static_cast<size_t>(c.block_size);
    size_t hit = 0;
    while (hit < keys.size() && hit < cap && held.count(keys[hit])) ++hit;
    EXPECT_EQ(static_cast<int>(hit) * c.block_size, s.cached_tokens) << prefix << " step " << i;
    hits += s.cached_tokens > 0;
  }
  apply_until(c.live.size());
  EXPECT_GT(hits, 0);
  EXPECT_EQ(resets, 1);
}

TEST(VllmArrayFramesTest, Vllm023EventsPredictEachRequestsCachedTokens) {
  ExpectEventsPredictCachedTokens("vllm023_array_int");
  ExpectEventsPredictCachedTokens("vllm023_array_bytes");
}

}  // namespace
}  // namespace kinference::kv
