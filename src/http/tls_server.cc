#include "http/tls_server.h"

#include <fmt/format.h>
#include <sys/stat.h>

namespace kinference::http {

namespace ssl = boost::asio::ssl;

Result<std::shared_ptr<ssl::context>> MakeServerTlsContext(const TlsServerFiles& f) {
  if (f.cert_file.empty() || f.key_file.empty()) {
    return Status(ErrorCode::kInvalidArgument, "tls: both a certificate and a key file are needed");
  }
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                       ssl::context::single_dh_use,
                   ec);
  auto fail = [&](const std::string& what, const std::string& file) {
    return Status(ErrorCode::kInvalidArgument,
                  fmt::format("tls: cannot load {} '{}': {}", what, file, ec.message()));
  };
  ctx->use_certificate_chain_file(f.cert_file, ec);
  if (ec) return fail("certificate", f.cert_file);
  ctx->use_private_key_file(f.key_file, ssl::context::pem, ec);
  if (ec) return fail("private key", f.key_file);
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return Status(ErrorCode::kInvalidArgument,
                  fmt::format("tls: private key '{}' does not match certificate '{}'", f.key_file,
                              f.cert_file));
  }
  if (!f.client_ca_file.empty()) {
    ctx->load_verify_file(f.client_ca_file, ec);
    if (ec) return fail("client CA file", f.client_ca_file);
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
    if (ec) return fail("client CA file", f.client_ca_file);
    // Names of acceptable CAs sent in the CertificateRequest (clients pick a certificate).
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(f.client_ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(ctx->native_handle(), names);
    }
  }
  return ctx;
}

std::string TlsFilesStamp(const TlsServerFiles& f) {
  std::string out;
  for (const std::string* path : {&f.cert_file, &f.key_file, &f.client_ca_file}) {
    if (path->empty()) continue;
    struct stat st {};
    if (::stat(path->c_str(), &st) != 0) {
      out += *path + ":missing;";
      continue;
    }
    out += fmt::format("{}:{}:{}:{}.{};", *path, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                       st.st_mtim.tv_nsec);
  }
  return out;
}

}  // namespace kinference::http
