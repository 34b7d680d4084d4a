#include "kv/event_codec.h"

#include <msgpuck.h>

#include <algorithm>
#include <cstring>

namespace kinference::kv {
namespace {

// Decoding cursor over [p, end), a buffer that mp_check() has validated as one whole
// msgpack value. That check alone does not bound the reads: msgpuck 2.0 (Debian 12)
// computes a map32's element count as 2 * n in 32 bits, so mp_check accepts
// "\xdf\xcd\x01\x3c\xcc" (a map of 3.4e9 pairs, 5 bytes) whose pairs a decoder then
// reads past the end (found by fuzzing, fuzz/kv_events_fuzz.cc). So every read checks the
// type at a position inside the buffer, container counts larger than the bytes left are
// refused, and Skip validates what it skips against `end`.
class Reader {
 public:
  Reader(const char* p, const char* end) : p_(p), end_(end) {}
  bool AtEnd() const { return p_ >= end_; }
  // The type at the cursor; MP_EXT (which no field accepts) at the end of the buffer.
  mp_type type() const { return AtEnd() ? MP_EXT : mp_typeof(*p_); }
  bool Is(mp_type t) const { return !AtEnd() && mp_typeof(*p_) == t; }
  Status Skip() {
    if (AtEnd() || mp_check(&p_, end_) != 0 || p_ > end_) {
      p_ = end_;
      return InvalidArgument("KV event batch: truncated value");
    }
    return Status::Ok();
  }
  bool Nil() {
    if (!Is(MP_NIL)) return false;
    mp_decode_nil(&p_);
    return true;
  }
  Status Uint(uint64_t* v, const char* what) {
    if (Is(MP_UINT)) {
      *v = mp_decode_uint(&p_);
      return Status::Ok();
    }
    return Bad(what, "an unsigned integer");
  }
  Status Int(int64_t* v, const char* what) {
    if (Is(MP_UINT)) {
      uint64_t u = mp_decode_uint(&p_);
      if (u > static_cast<uint64_t>(INT64_MAX)) return Bad(what, "an int64");
      *v = static_cast<int64_t>(u);
      return Status::Ok();
    }
    if (Is(MP_INT)) {
      *v = mp_decode_int(&p_);
      return Status::Ok();
    }
    return Bad(what, "an integer");
  }
  Status Number(double* v, const char* what) {
    switch (type()) {
      case MP_DOUBLE:
        *v = mp_decode_double(&p_);
        return Status::Ok();
      case MP_FLOAT:
        *v = mp_decode_float(&p_);
        return Status::Ok();
      case MP_UINT:
        *v = static_cast<double>(mp_decode_uint(&p_));
        return Status::Ok();
      case MP_INT:
        *v = static_cast<double>(mp_decode_int(&p_));
        return Status::Ok();
      default:
        return Bad(what, "a number");
    }
  }
  Status Str(std::string_view* s, const char* what) {
    if (!Is(MP_STR)) return Bad(what, "a string");
    uint32_t n = 0;
    const char* d = mp_decode_str(&p_, &n);
    if (p_ > end_) return Bad(what, "a whole string");
    *s = std::string_view(d, n);
    return Status::Ok();
  }
  Status Map(uint32_t* n) {
    if (!Is(MP_MAP)) return Bad("value", "a map");
    *n = mp_decode_map(&p_);
    return CountFits(*n, 2);
  }
  Status Array(uint32_t* n, const char* what) {
    if (!Is(MP_ARRAY)) return Bad(what, "an array");
    *n = mp_decode_array(&p_);
    return CountFits(*n, 1);
  }
  // A block hash: uint64, or bytes read as vLLM's int.from_bytes(b, "big") & (2^64-1).
  Status Hash(uint64_t* v, const char* what) {
    if (Is(MP_UINT)) return Uint(v, what);
    if (Is(MP_BIN) || Is(MP_STR)) {
      uint32_t n = 0;
      const char* d = Is(MP_BIN) ? mp_decode_bin(&p_, &n) : mp_decode_str(&p_, &n);
      if (p_ > end_) return Bad(what, "a whole hash");
      if (n == 0) return Bad(what, "a non-empty hash");
      uint64_t x = 0;
      for (uint32_t i = n > 8 ? n - 8 : 0; i < n; ++i) x = (x << 8) | static_cast<uint8_t>(d[i]);
      *v = x;
      return Status::Ok();
    }
    return Bad(what, "a block hash (integer or bytes)");
  }
  Status Hashes(std::vector<uint64_t>* out, const char* what) {
    uint32_t n = 0;
    if (Status s = Array(&n, what); !s.ok()) return s;
    out->resize(n);
    for (uint32_t i = 0; i < n; ++i)
      if (Status s = Hash(&(*out)[i], what); !s.ok()) return s;
    return Status::Ok();
  }
  Status OptInt(std::optional<int64_t>* v, const char* what) {
    if (Nil()) {
      v->reset();
      return Status::Ok();
    }
    int64_t x = 0;
    if (Status s = Int(&x, what); !s.ok()) return s;
    *v = x;
    return Status::Ok();
  }
  Status OptStr(std::optional<std::string>* v, const char* what) {
    if (Nil()) {
      v->reset();
      return Status::Ok();
    }
    std::string_view s;
    if (Status st = Str(&s, what); !st.ok()) return st;
    *v = std::string(s);
    return Status::Ok();
  }

 private:
  // Each element takes at least one byte.
  Status CountFits(uint64_t n, uint64_t per_element) const {
    if (p_ > end_ || n * per_element > static_cast<uint64_t>(end_ - p_))
      return InvalidArgument("KV event batch: container count exceeds the payload");
    return Status::Ok();
  }
  Status Bad(const char* what, const char* expected) const {
    return InvalidArgument(std::string("KV event batch: ") + what + " is not " + expected);
  }
  const char* p_;
  const char* end_;
};

// Field decoders shared by the map and the array encodings.
Status StoredField(Reader& r, std::string_view key, BlockStored& e) {
  if (key == "block_hashes") return r.Hashes(&e.block_hashes, "BlockStored.block_hashes");
  if (key == "parent_block_hash") {
    if (r.Nil()) return Status::Ok();
    uint64_t h = 0;
    if (Status s = r.Hash(&h, "BlockStored.parent_block_hash"); !s.ok()) return s;
    e.parent_block_hash = h;
    return Status::Ok();
  }
  if (key == "token_ids") {
    uint32_t n = 0;
    if (Status s = r.Array(&n, "BlockStored.token_ids"); !s.ok()) return s;
    e.token_ids.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t t = 0;
      if (Status s = r.Uint(&t, "BlockStored.token_ids[]"); !s.ok()) return s;
      if (t > UINT32_MAX) return InvalidArgument("KV event batch: token id out of range");
      e.token_ids[i] = static_cast<uint32_t>(t);
    }
    return Status::Ok();
  }
  if (key == "block_size") {
    int64_t b = 0;
    if (Status s = r.Int(&b, "BlockStored.block_size"); !s.ok()) return s;
    if (b <= 0 || b > (1 << 20)) return InvalidArgument("KV event batch: bad block_size");
    e.block_size = static_cast<int>(b);
    return Status::Ok();
  }
  if (key == "lora_id") return r.OptInt(&e.lora_id, "BlockStored.lora_id");
  if (key == "medium") return r.OptStr(&e.medium, "BlockStored.medium");
  if (key == "lora_name") return r.OptStr(&e.lora_name, "BlockStored.lora_name");
  if (key == "group_idx") return r.OptInt(&e.group_idx, "BlockStored.group_idx");
  return r.Skip();
}

Status RemovedField(Reader& r, std::string_view key, BlockRemoved& e) {
  if (key == "block_hashes") return r.Hashes(&e.block_hashes, "BlockRemoved.block_hashes");
  if (key == "medium") return r.OptStr(&e.medium, "BlockRemoved.medium");
  if (key == "group_idx") return r.OptInt(&e.group_idx, "BlockRemoved.group_idx");
  return r.Skip();
}

constexpr const char* kStoredFields[] = {"block_hashes", "parent_block_hash", "token_ids",
                                         "block_size",   "lora_id",           "medium",
                                         "lora_name",    "extra_keys",        "group_idx"};
constexpr const char* kRemovedFields[] = {"block_hashes", "medium", "group_idx"};

Status Validate(const BlockStored& e) {
  if (e.block_size <= 0) return InvalidArgument("KV event batch: BlockStored without block_size");
  if (e.token_ids.size() != e.block_hashes.size() * static_cast<size_t>(e.block_size))
    return InvalidArgument(
        "KV event batch: BlockStored token_ids is not block_hashes x block_size long");
  return Status::Ok();
}

template <typename E, typename F, size_t N>
Status FillEvent(Reader& r, bool is_map, uint32_t n, E& e, F field, const char* const (&names)[N]) {
  // Map: n key/value pairs left (the type pair read). Array: n fields left (tag read).
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (is_map) {
      if (!r.Is(MP_STR)) return InvalidArgument("KV event batch: event key is not a string");
      if (Status s = r.Str(&key, "event key"); !s.ok()) return s;
    } else if (i < N) {
      key = names[i];
    }
    if (Status s = field(r, key, e); !s.ok()) return s;
  }
  return Status::Ok();
}

Result<KvEvent> DecodeEvent(Reader& r) {
  std::string_view type;
  uint32_t n = 0;
  const bool is_map = r.Is(MP_MAP);
  if (is_map) {
    // msgspec writes the "type" tag first; accept it anywhere: find it on a copy.
    Reader probe = r;
    uint32_t pairs = 0;
    if (Status s = probe.Map(&pairs); !s.ok()) return s;
    for (uint32_t i = 0; i < pairs && type.empty(); ++i) {
      std::string_view key;
      if (!probe.Is(MP_STR)) return InvalidArgument("KV event batch: event key is not a string");
      if (Status s = probe.Str(&key, "event key"); !s.ok()) return s;
      if (key == "type") {
        if (Status s = probe.Str(&type, "event type"); !s.ok()) return s;
      } else {
        if (Status s = probe.Skip(); !s.ok()) return s;
      }
    }
    if (type.empty()) return InvalidArgument("KV event batch: event map without \"type\"");
    if (Status s = r.Map(&n); !s.ok()) return s;
  } else if (r.Is(MP_ARRAY)) {
    if (Status s = r.Array(&n, "event"); !s.ok()) return s;
    if (n == 0) return InvalidArgument("KV event batch: empty event array");
    if (Status s = r.Str(&type, "event tag"); !s.ok()) return s;
    --n;
  } else {
    return InvalidArgument("KV event batch: event is neither a map nor an array");
  }

  // In a map, the "type" pair is skipped by the field decoders as an unknown key.
  if (type == "BlockStored") {
    BlockStored e;
    if (Status s = FillEvent(r, is_map, n, e, StoredField, kStoredFields); !s.ok()) return s;
    if (Status s = Validate(e); !s.ok()) return s;
    return KvEvent(std::move(e));
  }
  if (type == "BlockRemoved") {
    BlockRemoved e;
    if (Status s = FillEvent(r, is_map, n, e, RemovedField, kRemovedFields); !s.ok()) return s;
    return KvEvent(std::move(e));
  }
  if (type == "AllBlocksCleared") {
    for (uint64_t i = 0; i < uint64_t{n} * (is_map ? 2 : 1); ++i)
      if (Status s = r.Skip(); !s.ok()) return s;
    return KvEvent(AllBlocksCleared{});
  }
  return InvalidArgument("KV event batch: unknown event type \"" + std::string(type) + "\"");
}

Status DecodeEvents(Reader& r, EventBatch& b) {
  uint32_t n = 0;
  if (Status s = r.Array(&n, "events"); !s.ok()) return s;
  b.events.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    Result<KvEvent> e = DecodeEvent(r);
    if (!e.ok()) return e.status();
    b.events.push_back(std::move(*e));
  }
  return Status::Ok();
}

// ---- encoding ----

class Writer {
 public:
  void Array(uint32_t n) {
    Grow(5);
    w_ = mp_encode_array(w_, n);
  }
  void Map(uint32_t n) {
    Grow(5);
    w_ = mp_encode_map(w_, n);
  }
  void Uint(uint64_t v) {
    Grow(9);
    w_ = mp_encode_uint(w_, v);
  }
  void Int(int64_t v) {
    Grow(9);
    w_ = v >= 0 ? mp_encode_uint(w_, static_cast<uint64_t>(v)) : mp_encode_int(w_, v);
  }
  void Double(double v) {
    Grow(9);
    w_ = mp_encode_double(w_, v);
  }
  void Nil() {
    Grow(1);
    w_ = mp_encode_nil(w_);
  }
  void Str(std::string_view s) {
    Grow(5 + s.size());
    w_ = mp_encode_str(w_, s.data(), static_cast<uint32_t>(s.size()));
  }
  void Hash(uint64_t h, HashEncoding enc) {
    if (enc == HashEncoding::kInt) return Uint(h);
    char digest[32] = {};
    for (int i = 0; i < 8; ++i) digest[31 - i] = static_cast<char>((h >> (8 * i)) & 0xff);
    Grow(5 + sizeof(digest));
    w_ = mp_encode_bin(w_, digest, sizeof(digest));
  }
  void OptInt(const std::optional<int64_t>& v) { v ? Int(*v) : Nil(); }
  void OptStr(const std::optional<std::string>& v) { v ? Str(*v) : Nil(); }
  std::string Take() {
    buf_.resize(static_cast<size_t>(w_ - buf_.data()));
    return std::move(buf_);
  }

 private:
  void Grow(size_t n) {
    size_t used = static_cast<size_t>(w_ - buf_.data());
    if (used + n > buf_.size()) {
      buf_.resize(std::max(buf_.size() * 2, used + n + 64));
    }
    w_ = buf_.data() + used;
  }
  std::string buf_ = std::string(256, '\0');
  char* w_ = buf_.data();
};

void EncodeStored(Writer& w, const BlockStored& e, EventEncoding enc, HashEncoding hashes) {
  // Map (vLLM 0.32): lora_id, medium and lora_name have no default, so msgspec writes
  // them even when None; group_idx and later fields are omitted at their default.
  // Array (earlier releases): that era's layout, [tag, block_hashes, parent_block_hash,
  // token_ids, block_size, lora_id, medium], extended through lora_name when set and
  // through group_idx when set (so nothing set is lost: found by fuzz/kv_events_fuzz.cc,
  // a lora_name without group_idx was dropped).
  const bool map = enc == EventEncoding::kMap;
  const bool has_group = e.group_idx.has_value();
  const bool has_name = e.lora_name.has_value() || has_group;
  if (map) {
    w.Map(8 + (has_group ? 1 : 0));
    w.Str("type");
  } else {
    w.Array(7 + (has_name ? 1 : 0) + (has_group ? 2 : 0));
  }
  w.Str("BlockStored");
  if (map) w.Str("block_hashes");
  w.Array(static_cast<uint32_t>(e.block_hashes.size()));
  for (uint64_t h : e.block_hashes) w.Hash(h, hashes);
  if (map) w.Str("parent_block_hash");
  e.parent_block_hash ? w.Hash(*e.parent_block_hash, hashes) : w.Nil();
  if (map) w.Str("token_ids");
  w.Array(static_cast<uint32_t>(e.token_ids.size()));
  for (uint32_t t : e.token_ids) w.Uint(t);
  if (map) w.Str("block_size");
  w.Int(e.block_size);
  if (map) w.Str("lora_id");
  w.OptInt(e.lora_id);
  if (map) w.Str("medium");
  w.OptStr(e.medium);
  if (map || has_name) {
    if (map) w.Str("lora_name");
    w.OptStr(e.lora_name);
  }
  if (has_group) {
    if (map) {
      w.Str("group_idx");
    } else {
      w.Nil();  // extra_keys
    }
    w.Int(*e.group_idx);
  }
}

void EncodeRemoved(Writer& w, const BlockRemoved& e, EventEncoding enc, HashEncoding hashes) {
  const bool map = enc == EventEncoding::kMap;
  if (map) {
    w.Map(3 + (e.group_idx ? 1 : 0));
    w.Str("type");
  } else {
    w.Array(3 + (e.group_idx ? 1 : 0));
  }
  w.Str("BlockRemoved");
  if (map) w.Str("block_hashes");
  w.Array(static_cast<uint32_t>(e.block_hashes.size()));
  for (uint64_t h : e.block_hashes) w.Hash(h, hashes);
  if (map) w.Str("medium");
  w.OptStr(e.medium);
  if (e.group_idx) {
    if (map) w.Str("group_idx");
    w.Int(*e.group_idx);
  }
}

}  // namespace

bool IsEngineCacheEvent(const KvEvent& e) {
  auto engine_medium = [](const std::optional<std::string>& m) { return !m || *m == kMediumGpu; };
  auto group0 = [](const std::optional<int64_t>& g) { return !g || *g == 0; };
  if (const auto* s = std::get_if<BlockStored>(&e))
    return engine_medium(s->medium) && group0(s->group_idx) && !s->lora_id && !s->lora_name;
  if (const auto* r = std::get_if<BlockRemoved>(&e))
    return engine_medium(r->medium) && group0(r->group_idx);
  return true;
}

Result<EventBatch> DecodeBatch(std::string_view payload) {
  const char* p = payload.data();
  const char* end = payload.data() + payload.size();
  if (payload.empty() || mp_check(&p, end) != 0 || p != end)
    return InvalidArgument("KV event batch: not one whole msgpack value");
  Reader r(payload.data(), end);
  EventBatch b;
  if (r.Is(MP_ARRAY)) {
    uint32_t n = 0;
    if (Status s = r.Array(&n, "batch"); !s.ok()) return s;
    if (n < 2) return InvalidArgument("KV event batch: batch array shorter than [ts, events]");
    if (Status s = r.Number(&b.ts, "ts"); !s.ok()) return s;
    if (Status s = DecodeEvents(r, b); !s.ok()) return s;
    if (n >= 3)
      if (Status s = r.OptInt(&b.data_parallel_rank, "data_parallel_rank"); !s.ok()) return s;
    return b;
  }
  if (r.Is(MP_MAP)) {
    uint32_t n = 0;
    if (Status s = r.Map(&n); !s.ok()) return s;
    bool events = false;
    for (uint32_t i = 0; i < n; ++i) {
      std::string_view key;
      if (Status s = r.Str(&key, "batch key"); !s.ok()) return s;
      if (key == "ts") {
        if (Status s = r.Number(&b.ts, "ts"); !s.ok()) return s;
      } else if (key == "events") {
        if (Status s = DecodeEvents(r, b); !s.ok()) return s;
        events = true;
      } else if (key == "data_parallel_rank") {
        if (Status s = r.OptInt(&b.data_parallel_rank, "data_parallel_rank"); !s.ok()) return s;
      } else if (Status s = r.Skip(); !s.ok()) {
        return s;
      }
    }
    if (!events) return InvalidArgument("KV event batch: no events");
    return b;
  }
  return InvalidArgument("KV event batch: payload is neither an array nor a map");
}

std::string EncodeBatch(const EventBatch& batch, EventEncoding events, HashEncoding hashes) {
  Writer w;
  w.Array(3);
  w.Double(batch.ts);
  w.Array(static_cast<uint32_t>(batch.events.size()));
  for (const KvEvent& e : batch.events) {
    if (const auto* s = std::get_if<BlockStored>(&e)) {
      EncodeStored(w, *s, events, hashes);
    } else if (const auto* r = std::get_if<BlockRemoved>(&e)) {
      EncodeRemoved(w, *r, events, hashes);
    } else if (events == EventEncoding::kMap) {
      w.Map(1);
      w.Str("type");
      w.Str("AllBlocksCleared");
    } else {
      w.Array(1);
      w.Str("AllBlocksCleared");
    }
  }
  w.OptInt(batch.data_parallel_rank);
  return w.Take();
}

}  // namespace kinference::kv
