#include "gateway/upstream/provider.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "gateway/config/config.h"
#include "gateway/config/config_fields.h"
#include "gateway/config/config_keys.h"

namespace kinference::gateway {
namespace {

using config_fields::CheckKeys;
using config_fields::Fail;
using config_fields::NonEmptyString;
using config_fields::NonNegative;
using config_fields::Positive;

void ParseBaseUrl(ProviderConfig& p, const std::string& field) {
  config_fields::HttpUrl u = config_fields::ParseHttpUrl(p.base_url, field);
  std::string_view path = u.path;
  while (path.ends_with("/")) path.remove_suffix(1);
  p.tls = u.tls;
  p.host = std::move(u.host);
  p.port = u.port;
  p.base_path = std::string(path);
}

ProviderConfig ParseProvider(const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) Fail(where, "expected a map");
  CheckKeys(node, where, ConfigSection("providers[]"));
  ProviderConfig p;
  p.name = NonEmptyString(node["name"], where + ".name");
  p.model = NonEmptyString(node["model"], where + ".model");
  p.serves_model = NonEmptyString(node["serves_model"], where + ".serves_model");
  p.base_url = NonEmptyString(node["base_url"], where + ".base_url");
  ParseBaseUrl(p, where + ".base_url");
  if (node["api_key_env"])
    p.api_key_env = NonEmptyString(node["api_key_env"], where + ".api_key_env");
  if (node["api_key_file"])
    p.api_key_file = NonEmptyString(node["api_key_file"], where + ".api_key_file");
  if (p.api_key_env.empty() == p.api_key_file.empty())
    Fail(where + ".api_key_env", "give exactly one of api_key_env and api_key_file");
  if (node["timeout_s"])
    p.timeout_s = config_fields::DurationS(node["timeout_s"], where + ".timeout_s");
  if (node["retries_before_first_byte"]) {
    double r = NonNegative(node["retries_before_first_byte"], where + ".retries_before_first_byte");
    if (r != static_cast<int>(r) || r > 10)
      Fail(where + ".retries_before_first_byte", "expected an integer 0..10");
    p.retries_before_first_byte = static_cast<int>(r);
  }
  if (const auto cb = node["circuit_breaker"]) {
    std::string w = where + ".circuit_breaker";
    if (!cb.IsMap()) Fail(w, "expected a map with failures, cooldown_s");
    CheckKeys(cb, w, ConfigSection("providers[].circuit_breaker"));
    if (cb["failures"]) {
      double f = Positive(cb["failures"], w + ".failures");
      if (f != static_cast<int>(f)) Fail(w + ".failures", "expected an integer");
      p.breaker_failures = static_cast<int>(f);
    }
    if (cb["cooldown_s"])
      p.breaker_cooldown_s = config_fields::DurationS(cb["cooldown_s"], w + ".cooldown_s");
  }
  if (node["ca_file"]) p.ca_file = NonEmptyString(node["ca_file"], where + ".ca_file");
  if (node["api"]) {
    std::string api = NonEmptyString(node["api"], where + ".api");
    if (api == "anthropic") {
      p.api = ProviderApi::kAnthropic;
    } else if (api != "openai") {
      Fail(where + ".api", "expected openai or anthropic, got '" + api + "'");
    }
  }
  const bool anthropic = p.api == ProviderApi::kAnthropic;
  // The gateway appends /v1/messages itself: a base_url ending in /v1 would call /v1/v1/messages.
  std::string lower_path = p.base_path;
  for (char& c : lower_path) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (anthropic && lower_path.ends_with("/v1"))
    Fail(where + ".base_url", "'" + p.base_url +
                                  "': base_url for api: anthropic ends before /v1, e.g. "
                                  "https://api.anthropic.com");
  for (const char* key : {"anthropic_version", "default_max_tokens"}) {
    if (node[key] && !anthropic) Fail(where + "." + key, "only valid with api: anthropic");
  }
  if (node["anthropic_version"])
    p.anthropic_version = NonEmptyString(node["anthropic_version"], where + ".anthropic_version");
  if (node["default_max_tokens"]) {
    double m = Positive(node["default_max_tokens"], where + ".default_max_tokens");
    if (m > 1e9 || m != static_cast<int>(m))
      Fail(where + ".default_max_tokens", "expected an integer 1..1e9");
    p.default_max_tokens = static_cast<int>(m);
  }
  return p;
}

std::string Trim(std::string s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

}  // namespace

std::vector<ProviderConfig> ParseProvidersConfig(const YAML::Node& node) {
  if (!node.IsSequence()) Fail("providers", "expected a list of providers");
  std::vector<ProviderConfig> out;
  std::set<std::string> names;
  for (size_t i = 0; i < node.size(); ++i) {
    std::string where = "providers[" + std::to_string(i) + "]";
    ProviderConfig p = ParseProvider(node[i], where);
    if (!names.insert(p.name).second) Fail(where + ".name", "duplicate provider '" + p.name + "'");
    out.push_back(std::move(p));
  }
  return out;
}

std::string LoadProviderApiKey(const ProviderConfig& p, const std::string& where) {
  return LoadApiKey(p.api_key_env, p.api_key_file, where);
}

std::string LoadApiKey(const std::string& env, const std::string& file, const std::string& where) {
  if (!env.empty()) {
    const char* v = std::getenv(env.c_str());
    std::string key = v ? Trim(v) : std::string();
    if (key.empty()) Fail(where + ".api_key_env", "environment variable " + env + " is not set");
    return key;
  }
  std::ifstream in(file);
  if (!in) Fail(where + ".api_key_file", "cannot read '" + file + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string key = Trim(ss.str());
  if (key.empty()) Fail(where + ".api_key_file", "'" + file + "' is empty");
  return key;
}

void CheckProviderCaFile(const ProviderConfig& p, const std::string& where) {
  if (p.ca_file.empty()) return;
  const std::string field = where + ".ca_file";
  // What the TLS client loads per call (ssl::context::load_verify_file), checked once here.
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_file(p.ca_file.c_str(), "r"), BIO_free);
  if (!bio) {
    ERR_clear_error();
    Fail(field, "cannot read '" + p.ca_file + "'");
  }
  int certs = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_free(cert);
    ++certs;
  }
  ERR_clear_error();  // the loop ends on "no start line"
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
  bool loads = store && X509_STORE_load_locations(store.get(), p.ca_file.c_str(), nullptr) == 1;
  ERR_clear_error();
  if (certs == 0 || !loads) Fail(field, "'" + p.ca_file + "' holds no PEM certificate");
}

std::string ProviderTarget(const ProviderConfig& p, const std::string& api_path) {
  if (p.api == ProviderApi::kAnthropic) return p.base_path + "/v1/messages";
  std::string_view path(api_path);
  if (path.starts_with("/v1/")) path.remove_prefix(3);
  return p.base_path + std::string(path);
}

bool CircuitBreaker::OnFailure(Seconds now) {
  ++consecutive_;
  if (open_ || consecutive_ < failures_) return false;
  open_ = true;
  open_until_ = now + cooldown_s_;
  return true;
}

bool CircuitBreaker::MaybeClose(Seconds now) {
  if (!open_ || now < open_until_) return false;
  open_ = false;
  consecutive_ = failures_ - 1;  // half-open: the next failure opens it again
  return true;
}

}  // namespace kinference::gateway
