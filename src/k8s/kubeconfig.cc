#include "k8s/kubeconfig.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <boost/url/parse.hpp>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kinference::k8s {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(ErrorCode::kNotFound, fmt::format("{}: cannot read file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(0, s.find_first_not_of(ws));
  s.erase(s.find_last_not_of(ws) + 1);
  return s;
}

// Fills host, port, tls and path_prefix from `server`.
Status ParseServer(ClusterConfig& c, const std::string& where) {
  auto u = boost::urls::parse_uri(c.server);
  if (!u || (u->scheme() != "https" && u->scheme() != "http") || !u->has_authority() ||
      u->has_query() || u->has_fragment() || u->has_userinfo()) {
    return InvalidArgument(
        fmt::format("{}: server: expected https://host[:port][/path], got '{}'", where, c.server));
  }
  c.tls = u->scheme() == "https";
  c.port = c.tls ? 443 : 80;
  if (u->has_port()) {
    std::string_view text = u->port();
    unsigned port = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (ec != std::errc() || ptr != text.data() + text.size() || port == 0 || port > 65535)
      return InvalidArgument(fmt::format("{}: server: bad port in '{}'", where, c.server));
    c.port = static_cast<uint16_t>(port);
  }
  std::string_view host = u->encoded_host_address();
  if (host.starts_with("[") && host.ends_with("]")) host = host.substr(1, host.size() - 2);
  if (host.empty()) return InvalidArgument(fmt::format("{}: server: no host", where));
  c.host = std::string(host);
  c.path_prefix = std::string(u->encoded_path());
  while (!c.path_prefix.empty() && c.path_prefix.back() == '/') c.path_prefix.pop_back();
  return Status::Ok();
}

// The entry of `list` (clusters, users, contexts) named `name`: its `field` map.
YAML::Node Named(const YAML::Node& list, const std::string& name, const char* field) {
  if (!list || !list.IsSequence()) return YAML::Node(YAML::NodeType::Undefined);
  for (const auto& item : list) {
    if (item.IsMap() && item["name"] && item["name"].IsScalar() && item["name"].Scalar() == name) {
      return item[field];
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string Str(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap() || !n[key] || !n[key].IsScalar()) return {};
  return n[key].Scalar();
}

class KubeconfigReader {
 public:
  KubeconfigReader(const std::string& path) : path_(path) {
    dir_ = std::filesystem::path(path).parent_path();
  }

  std::string Abs(const std::string& file) const {
    std::filesystem::path p(file);
    if (p.is_absolute() || dir_.empty()) return p.string();
    return (dir_ / p).lexically_normal().string();
  }

  // `data_key` (base64) or `file_key` (a file) of `node`, PEM text; "" when neither.
  Result<std::string> Pem(const YAML::Node& node, const char* data_key, const char* file_key,
                          const std::string& where) const {
    if (std::string data = Str(node, data_key); !data.empty()) {
      std::string out;
      if (!Base64Decode(data, out))
        return InvalidArgument(fmt::format("{}: {}.{}: not base64", path_, where, data_key));
      return out;
    }
    if (std::string file = Str(node, file_key); !file.empty()) {
      auto text = ReadFile(Abs(file));
      if (!text.ok())
        return Status(ErrorCode::kNotFound, fmt::format("{}: {}.{}: {}", path_, where, file_key,
                                                        text.status().message()));
      return text;
    }
    return std::string();
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::filesystem::path dir_;
};

}  // namespace

bool Base64Decode(std::string_view in, std::string& out) {
  out.clear();
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+') {
      v = 62;
    } else if (c == '/') {
      v = 63;
    } else if (c == '=') {
      ++pad;
      continue;
    } else if (c == '\n' || c == '\r' || c == ' ') {
      continue;
    } else {
      return false;
    }
    if (pad > 0) return false;  // data after padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return pad <= 2;
}

Result<ClusterConfig> ParseKubeconfig(std::string_view yaml_text, const std::string& path,
                                      const std::string& context) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(fmt::format("{}: line {}: {}", path, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap()) return InvalidArgument(fmt::format("{}: not a kubeconfig mapping", path));
  KubeconfigReader reader(path);
  std::string ctx_name = context.empty() ? Str(root, "current-context") : context;
  if (ctx_name.empty())
    return InvalidArgument(
        fmt::format("{}: current-context: not set (and no context given)", path));
  YAML::Node ctx = Named(root["contexts"], ctx_name, "context");
  if (!ctx || !ctx.IsMap())
    return InvalidArgument(fmt::format("{}: contexts: no context named '{}'", path, ctx_name));
  ClusterConfig c;
  c.source = fmt::format("kubeconfig {} (context {})", path, ctx_name);
  std::string cluster_name = Str(ctx, "cluster");
  YAML::Node cluster = Named(root["clusters"], cluster_name, "cluster");
  if (!cluster || !cluster.IsMap())
    return InvalidArgument(fmt::format("{}: clusters: no cluster named '{}' (context {})", path,
                                       cluster_name, ctx_name));
  std::string where = fmt::format("clusters[{}].cluster", cluster_name);
  c.server = Str(cluster, "server");
  if (c.server.empty()) return InvalidArgument(fmt::format("{}: {}.server: missing", path, where));
  if (Status s = ParseServer(c, fmt::format("{}: {}", path, where)); !s.ok()) return s;
  if (Str(cluster, "insecure-skip-tls-verify") == "true")
    return InvalidArgument(
        fmt::format("{}: {}.insecure-skip-tls-verify: not supported (give certificate-authority)",
                    path, where));
  if (std::string data = Str(cluster, "certificate-authority-data"); !data.empty()) {
    if (!Base64Decode(data, c.ca_pem))
      return InvalidArgument(
          fmt::format("{}: {}.certificate-authority-data: not base64", path, where));
  } else if (std::string file = Str(cluster, "certificate-authority"); !file.empty()) {
    c.ca_file = reader.Abs(file);
  }
  if (std::string ns = Str(ctx, "namespace"); !ns.empty()) c.default_namespace = ns;
  std::string user_name = Str(ctx, "user");
  if (user_name.empty()) return c;  // anonymous
  YAML::Node user = Named(root["users"], user_name, "user");
  if (!user) return c;  // clientcmd treats a missing user as anonymous too
  if (!user.IsMap()) return c;
  where = fmt::format("users[{}].user", user_name);
  if (user["exec"] || user["auth-provider"])
    return InvalidArgument(fmt::format(
        "{}: {}: exec and auth-provider credentials are not supported (use a token, tokenFile "
        "or a client certificate)",
        path, where));
  c.token = Trim(Str(user, "token"));
  if (c.token.empty()) {
    if (std::string file = Str(user, "tokenFile"); !file.empty()) c.token_file = reader.Abs(file);
  }
  auto cert = reader.Pem(user, "client-certificate-data", "client-certificate", where);
  if (!cert.ok()) return cert.status();
  auto key = reader.Pem(user, "client-key-data", "client-key", where);
  if (!key.ok()) return key.status();
  if (cert->empty() != key->empty())
    return InvalidArgument(fmt::format(
        "{}: {}: client-certificate and client-key go together (one is missing)", path, where));
  c.client_cert_pem = std::move(*cert);
  c.client_key_pem = std::move(*key);
  return c;
}

Result<ClusterConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseKubeconfig(*text, path, context);
}

Result<ClusterConfig> InClusterConfig(std::string_view host, std::string_view port,
                                      const std::string& sa_dir) {
  if (host.empty() || port.empty())
    return Status(ErrorCode::kNotFound,
                  "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  ClusterConfig c;
  c.source = "in-cluster";
  // An IPv6 service host goes in brackets in the URL.
  c.server = host.find(':') != std::string_view::npos ? fmt::format("https://[{}]:{}", host, port)
                                                      : fmt::format("https://{}:{}", host, port);
  if (Status s = ParseServer(c, "in-cluster"); !s.ok()) return s;
  c.ca_file = sa_dir + "/ca.crt";
  c.token_file = sa_dir + "/token";
  std::ifstream token(c.token_file);
  if (!token)
    return Status(ErrorCode::kNotFound, fmt::format("in-cluster: cannot read {}", c.token_file));
  std::ifstream ca(c.ca_file);
  if (!ca)
    return Status(ErrorCode::kNotFound, fmt::format("in-cluster: cannot read {}", c.ca_file));
  if (auto ns = ReadFile(sa_dir + "/namespace"); ns.ok() && !Trim(*ns).empty())
    c.default_namespace = Trim(*ns);
  return c;
}

Result<ClusterConfig> ResolveClusterConfig(const std::string& kubeconfig_flag,
                                           const std::string& context) {
  if (!kubeconfig_flag.empty()) return LoadKubeconfig(kubeconfig_flag, context);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    // $KUBECONFIG may list several files (':'); the first one is used.
    std::string first(env);
    first = first.substr(0, first.find(':'));
    return LoadKubeconfig(first, context);
  }
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host != nullptr && *host != '\0') return InClusterConfig(host, port ? port : "");
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    std::string path = std::string(home) + "/.kube/config";
    if (std::filesystem::exists(path)) return LoadKubeconfig(path, context);
  }
  return Status(ErrorCode::kNotFound,
                "no Kubernetes configuration: give --kubeconfig, set $KUBECONFIG, or run in a "
                "cluster (KUBERNETES_SERVICE_HOST)");
}

}  // namespace kinference::k8s
