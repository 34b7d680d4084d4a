// Strict YAML loader for InferencePolicy resources (see policy/policy.h).
#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "policy/policy.h"

namespace kinference::policy {
namespace {

bool ValidTag(std::string_view t) {
  if (t.empty()) return false;
  for (char c : t) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ':' || c == '.' ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Kubernetes DNS-1123 subdomain (metadata.name of most resources). The name goes into the
// decision header and /metrics labels, so quotes, commas and CR/LF must never appear.
// At most 253 characters of dot-separated DNS-1123 labels, each 1-63 of [a-z0-9-]
// starting and ending alphanumeric (Kubernetes "Object Names and IDs").
bool ValidName(std::string_view n) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (n.empty() || n.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = n.find('.', start);
    std::string_view label = n.substr(start, dot == std::string_view::npos ? n.npos : dot - start);
    if (label.empty() || label.size() > 63 || !alnum(label.front()) || !alnum(label.back()))
      return false;
    for (char c : label) {
      if (!alnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// Collects errors as "source: path: reason".
class Parser {
 public:
  explicit Parser(std::string_view source) : source_(source) {}

  void Error(const std::string& path, const std::string& reason) {
    errors_.push_back(fmt::format("{}: {}: {}", source_, path, reason));
  }
  const std::vector<std::string>& errors() const { return errors_; }

  // Reports keys of `node` not in `allowed`. Returns false when `node` is not a map.
  bool CheckMap(const YAML::Node& node, const std::string& path,
                std::initializer_list<std::string_view> allowed) {
    if (!node.IsMap()) {
      Error(path, "expected a mapping");
      return false;
    }
    for (const auto& kv : node) {
      std::string key = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        Error(Join(path, key), fmt::format("unknown field (expected one of: {})", list));
      }
    }
    return true;
  }

  static std::string Join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }

  std::optional<std::string> String(const YAML::Node& n, const std::string& path) {
    if (!n.IsScalar()) {
      Error(path, "expected a string");
      return std::nullopt;
    }
    return n.Scalar();
  }

  std::optional<int64_t> Int(const YAML::Node& n, const std::string& path) {
    int64_t v = 0;
    if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v)) {
      Error(path, "expected an integer");
      return std::nullopt;
    }
    return v;
  }

  std::optional<double> Number(const YAML::Node& n, const std::string& path, double lo, double hi) {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v)) {
      Error(path, "expected a number");
      return std::nullopt;
    }
    if (!(v >= lo && v <= hi)) {
      Error(path, fmt::format("{} out of range [{}, {}]", n.Scalar(), lo, hi));
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> Bool(const YAML::Node& n, const std::string& path) {
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
      Error(path, "expected true or false");
      return std::nullopt;
    }
    return v;
  }

  std::vector<std::string> Strings(const YAML::Node& n, const std::string& path) {
    std::vector<std::string> out;
    if (!n.IsSequence()) {
      Error(path, "expected a list of strings");
      return out;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      auto s = String(n[i], fmt::format("{}[{}]", path, i));
      if (s && s->empty()) {
        Error(fmt::format("{}[{}]", path, i), "must not be empty");
      } else if (s) {
        out.push_back(*s);
      }
    }
    return out;
  }

  // Tags as the taggers emit them (policy/taggers.h, ParseTagHeader): [a-z0-9:._-]. A
  // tag outside that alphabet could never match.
  std::vector<std::string> Tags(const YAML::Node& n, const std::string& path) {
    std::vector<std::string> out = Strings(n, path);
    for (size_t i = 0; i < out.size(); ++i) {
      if (!ValidTag(out[i]))
        Error(fmt::format("{}[{}]", path, i),
              fmt::format("invalid tag '{}' (tags use lower-case a-z, 0-9, ':', '.', '_', '-')",
                          out[i]));
    }
    return out;
  }

  Selector ParseSelector(const YAML::Node& n, const std::string& path) {
    Selector s;
    if (!CheckMap(n, path, {"classes", "pools", "providers"})) return s;
    if (n["classes"]) {
      auto names = Strings(n["classes"], Join(path, "classes"));
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == "local") {
          s.classes.push_back(EndpointClass::kLocal);
        } else if (names[i] == "provider") {
          s.classes.push_back(EndpointClass::kProvider);
        } else {
          Error(fmt::format("{}[{}]", Join(path, "classes"), i),
                fmt::format("unknown class '{}' (expected local|provider)", names[i]));
        }
      }
    }
    if (n["pools"]) s.pools = Strings(n["pools"], Join(path, "pools"));
    if (n["providers"]) s.providers = Strings(n["providers"], Join(path, "providers"));
    return s;
  }

  void ParseMatch(const YAML::Node& n, const std::string& path, Match& m) {
    if (!CheckMap(n, path, {"tenants", "models", "tags", "features"})) return;
    if (n["tenants"]) m.tenants = Strings(n["tenants"], Join(path, "tenants"));
    if (n["models"]) m.models = Strings(n["models"], Join(path, "models"));
    if (auto t = n["tags"]) {
      std::string tp = Join(path, "tags");
      if (CheckMap(t, tp, {"anyOf", "allOf", "noneOf"})) {
        if (t["anyOf"]) m.tags.any_of = Tags(t["anyOf"], Join(tp, "anyOf"));
        if (t["allOf"]) m.tags.all_of = Tags(t["allOf"], Join(tp, "allOf"));
        if (t["noneOf"]) m.tags.none_of = Tags(t["noneOf"], Join(tp, "noneOf"));
      }
    }
    if (auto f = n["features"]) {
      std::string fp = Join(path, "features");
      if (CheckMap(f, fp, {"minPromptTokens", "maxPromptTokens", "toolsPresent", "stream"})) {
        auto& fm = m.features;
        if (f["minPromptTokens"])
          fm.min_prompt_tokens = Int(f["minPromptTokens"], Join(fp, "minPromptTokens"));
        if (f["maxPromptTokens"])
          fm.max_prompt_tokens = Int(f["maxPromptTokens"], Join(fp, "maxPromptTokens"));
        if (f["toolsPresent"]) fm.tools_present = Bool(f["toolsPresent"], Join(fp, "toolsPresent"));
        if (f["stream"]) fm.stream = Bool(f["stream"], Join(fp, "stream"));
        if (fm.min_prompt_tokens && fm.max_prompt_tokens &&
            *fm.min_prompt_tokens > *fm.max_prompt_tokens) {
          Error(fp, "minPromptTokens is greater than maxPromptTokens");
        }
      }
    }
  }

  void ParseConstraints(const YAML::Node& n, const std::string& path, Constraints& c) {
    if (!CheckMap(n, path, {"include", "exclude", "when", "prefer"})) return;
    if (n["include"]) c.include = ParseSelector(n["include"], Join(path, "include"));
    if (n["exclude"]) c.exclude = ParseSelector(n["exclude"], Join(path, "exclude"));
    if (n["prefer"]) c.prefer = ParseSelector(n["prefer"], Join(path, "prefer"));
    if (auto w = n["when"]) {
      std::string wp = Join(path, "when");
      if (CheckMap(w, wp,
                   {"maxQueueDepth", "maxKvCacheUsage", "maxPredictedTtftSeconds",
                    "maxMetricsAgeSeconds"})) {
        constexpr double kBig = 1e12;
        if (w["maxQueueDepth"])
          c.when.max_queue_depth = Number(w["maxQueueDepth"], Join(wp, "maxQueueDepth"), 0, kBig);
        if (w["maxKvCacheUsage"])
          c.when.max_kv_cache_usage =
              Number(w["maxKvCacheUsage"], Join(wp, "maxKvCacheUsage"), 0, 1);
        if (w["maxPredictedTtftSeconds"])
          c.when.max_predicted_ttft_s =
              Number(w["maxPredictedTtftSeconds"], Join(wp, "maxPredictedTtftSeconds"), 0, kBig);
        if (w["maxMetricsAgeSeconds"])
          c.when.max_metrics_age_s =
              Number(w["maxMetricsAgeSeconds"], Join(wp, "maxMetricsAgeSeconds"), 0, kBig);
      }
    }
  }

  void ParseAlternatives(const YAML::Node& n, const std::string& path,
                         std::vector<Alternative>& out) {
    if (!n.IsSequence()) {
      Error(path, "expected a list");
      return;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      std::string ip = fmt::format("{}[{}]", path, i);
      if (!CheckMap(n[i], ip, {"model", "toleranceSeconds"})) continue;
      Alternative a;
      if (!n[i]["model"]) {
        Error(Join(ip, "model"), "required");
      } else if (auto s = String(n[i]["model"], Join(ip, "model"))) {
        a.model = *s;
      }
      if (n[i]["toleranceSeconds"]) {
        if (auto t = Number(n[i]["toleranceSeconds"], Join(ip, "toleranceSeconds"), 0, 3600))
          a.tolerance_s = *t;
      }
      out.push_back(a);
    }
  }

  std::optional<Policy> ParseDocument(const YAML::Node& doc, const std::string& path) {
    size_t before = errors_.size();
    Policy p;
    p.source = std::string(source_);
    if (!CheckMap(doc, path.empty() ? "(document)" : path,
                  {"apiVersion", "kind", "metadata", "spec"}))
      return std::nullopt;
    auto api =
        doc["apiVersion"] ? String(doc["apiVersion"], Join(path, "apiVersion")) : std::nullopt;
    if (!doc["apiVersion"])
      Error(Join(path, "apiVersion"), "required");
    else if (api && *api != kApiVersion)
      Error(Join(path, "apiVersion"),
            fmt::format("unsupported '{}' (expected {})", *api, kApiVersion));
    auto kind = doc["kind"] ? String(doc["kind"], Join(path, "kind")) : std::nullopt;
    if (!doc["kind"])
      Error(Join(path, "kind"), "required");
    else if (kind && *kind != kKind)
      Error(Join(path, "kind"), fmt::format("unsupported '{}' (expected {})", *kind, kKind));
    if (!doc["metadata"]) {
      Error(Join(path, "metadata"), "required");
    } else if (CheckMap(doc["metadata"], Join(path, "metadata"),
                        {"name", "labels", "annotations", "namespace"})) {
      auto md = doc["metadata"];
      if (!md["name"])
        Error(Join(path, "metadata.name"), "required");
      else if (auto n = String(md["name"], Join(path, "metadata.name"))) {
        if (!ValidName(*n))
          Error(Join(path, "metadata.name"),
                fmt::format("invalid name '{}' (a DNS-1123 subdomain: lower-case alphanumerics, "
                            "'-' and '.', at most 253 characters, starting and ending with an "
                            "alphanumeric)",
                            *n));
        p.name = *n;
      }
    }
    if (!doc["spec"]) {
      Error(Join(path, "spec"), "required");
    } else {
      auto spec = doc["spec"];
      std::string sp = Join(path, "spec");
      if (CheckMap(spec, sp,
                   {"priority", "mode", "match", "constraints", "alternatives", "onNoCandidate",
                    "onTaggerFailure", "onUnscannableContent", "requestPriority"})) {
        if (spec["priority"]) {
          if (auto v = Int(spec["priority"], Join(sp, "priority"))) p.priority = *v;
        }
        if (spec["mode"]) {
          auto m = String(spec["mode"], Join(sp, "mode"));
          if (m && *m == "enforce")
            p.mode = Mode::kEnforce;
          else if (m && *m == "dry-run")
            p.mode = Mode::kDryRun;
          else if (m)
            Error(Join(sp, "mode"),
                  fmt::format("unknown mode '{}' (expected enforce|dry-run)", *m));
        }
        if (spec["match"]) ParseMatch(spec["match"], Join(sp, "match"), p.match);
        if (spec["constraints"])
          ParseConstraints(spec["constraints"], Join(sp, "constraints"), p.constraints);
        if (spec["alternatives"])
          ParseAlternatives(spec["alternatives"], Join(sp, "alternatives"), p.alternatives);
        if (spec["onNoCandidate"]) {
          auto v = String(spec["onNoCandidate"], Join(sp, "onNoCandidate"));
          if (v && *v != "reject")
            Error(Join(sp, "onNoCandidate"),
                  fmt::format("unknown value '{}' (expected reject)", *v));
        }
        if (spec["onTaggerFailure"]) {
          auto v = String(spec["onTaggerFailure"], Join(sp, "onTaggerFailure"));
          if (v && *v == "reject")
            p.on_tagger_failure = OnTaggerFailure::kReject;
          else if (v && *v == "ignore")
            p.on_tagger_failure = OnTaggerFailure::kIgnore;
          else if (v)
            Error(Join(sp, "onTaggerFailure"),
                  fmt::format("unknown value '{}' (expected reject|ignore)", *v));
        }
        if (spec["requestPriority"]) {
          std::string f = Join(sp, "requestPriority");
          if (auto v = Int(spec["requestPriority"], f)) {
            if (*v < -kMaxRequestPriority || *v > kMaxRequestPriority)
              Error(f, fmt::format("{} out of range (-{}..{})", *v, kMaxRequestPriority,
                                   kMaxRequestPriority));
            else
              p.request_priority = *v;
          }
        }
        if (spec["onUnscannableContent"]) {
          std::string f = Join(sp, "onUnscannableContent");
          auto v = String(spec["onUnscannableContent"], f);
          if (v && *v == "ignore")
            p.on_unscannable_content = OnUnscannableContent::kIgnore;
          else if (v && *v == "treatAsTagged")
            p.on_unscannable_content = OnUnscannableContent::kTreatAsTagged;
          else if (v)
            Error(f, fmt::format("unknown value '{}' (expected ignore|treatAsTagged)", *v));
        }
      }
    }
    if (errors_.size() != before) return std::nullopt;
    return p;
  }

 private:
  std::string_view source_;
  std::vector<std::string> errors_;
};

// yaml-cpp 0.7 (Debian 12) loops forever in LoadAll, allocating an empty document per turn,
// on a document that starts with a flow entry (`,` as the first token: found by fuzzing,
// fuzz/policy_yaml_fuzz.cc): the parser returns "another document" without consuming
// anything. This pass walks the documents with a handler that builds nothing and reports
// the place where two documents start at the same position, before LoadAll runs.
class DocumentStarts final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { last = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
  YAML::Mark last = YAML::Mark::null_mark();
};

std::optional<YAML::Mark> RunawayDocument(std::string_view yaml_text) {
  std::istringstream in{std::string(yaml_text)};
  YAML::Parser parser(in);
  DocumentStarts starts;
  int previous = -1;
  while (parser.HandleNextDocument(starts)) {
    if (starts.last.pos == previous) return starts.last;
    previous = starts.last.pos;
  }
  return std::nullopt;
}

Status Joined(const std::vector<std::string>& errors) {
  std::string msg;
  for (const auto& e : errors) msg += (msg.empty() ? "" : "\n") + e;
  return Status(ErrorCode::kInvalidArgument, msg);
}

}  // namespace

const char* ToString(Mode m) { return m == Mode::kEnforce ? "enforce" : "dry-run"; }
const char* ToString(EndpointClass c) { return c == EndpointClass::kLocal ? "local" : "provider"; }

void SortPolicies(std::vector<Policy>& policies) {
  std::stable_sort(policies.begin(), policies.end(), [](const Policy& a, const Policy& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    return a.name < b.name;
  });
}

Result<std::vector<Policy>> ParsePolicies(std::string_view yaml_text, std::string_view source) {
  Parser parser(source);
  std::vector<Policy> out;
  std::vector<YAML::Node> docs;
  try {
    if (auto mark = RunawayDocument(yaml_text)) {
      return Status(ErrorCode::kInvalidArgument,
                    fmt::format("{}: line {}, column {}: malformed YAML (no document can start "
                                "here)",
                                source, mark->line + 1, mark->column + 1));
    }
    docs = YAML::LoadAll(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return Status(ErrorCode::kInvalidArgument,
                  fmt::format("{}: line {}: {}", source, e.mark.line + 1, e.msg));
  }
  size_t real_docs = 0;
  for (const auto& d : docs) real_docs += d.IsNull() ? 0 : 1;
  size_t index = 0;
  for (const auto& doc : docs) {
    if (doc.IsNull()) continue;  // empty document between `---` separators
    // Field paths carry the document index only when the file holds several.
    std::string path = real_docs > 1 ? fmt::format("[document {}]", index) : "";
    ++index;
    if (auto p = parser.ParseDocument(doc, path)) out.push_back(std::move(*p));
  }
  if (!parser.errors().empty()) return Joined(parser.errors());
  return out;
}

Result<PolicySet> LoadPolicySet(std::span<const std::string> paths, uint64_t generation) {
  PolicySet set;
  set.generation = generation;
  std::vector<std::string> errors;
  std::map<std::string, std::string> seen;  // name -> source
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status(ErrorCode::kNotFound, fmt::format("{}: cannot read file", path));
    std::stringstream ss;
    ss << in.rdbuf();
    auto parsed = ParsePolicies(ss.str(), path);
    if (!parsed.ok()) {
      errors.push_back(parsed.status().message());
      continue;
    }
    if (parsed->empty()) {
      // An empty or comment-only file is a mistake (or a half-written file during a hot
      // reload): reject it so that the last valid set stays.
      errors.push_back(fmt::format("{}: no InferencePolicy documents", path));
      continue;
    }
    for (auto& p : *parsed) {
      auto [it, inserted] = seen.emplace(p.name, path);
      if (!inserted) {
        errors.push_back(fmt::format("{}: metadata.name: duplicate policy name '{}' (also in {})",
                                     path, p.name, it->second));
        continue;
      }
      set.policies.push_back(std::move(p));
    }
  }
  if (!errors.empty()) return Joined(errors);
  SortPolicies(set.policies);
  return set;
}

}  // namespace kinference::policy
