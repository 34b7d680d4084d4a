// Server-side TLS for http::Server: a context built from PEM files (certificate chain,
// private key, optionally a CA bundle that client certificates must chain to), and a stamp
// of those files to notice when they change (a renewed certificate, a rotated Kubernetes
// Secret) so that the server can rebuild the context without a restart.
//
// Context: TLS 1.2 or later (TLS 1.0/1.1 are deprecated by RFC 8996); with a client CA,
// peers must present a certificate that verifies against it (verify_peer |
// verify_fail_if_no_peer_cert), otherwise the handshake fails. Errors: kInvalidArgument
// naming the file that could not be loaded and OpenSSL's reason (a key that does not
// match the certificate included).
//
// Thread-safety: free functions; the returned context is immutable once built and may be
// shared by sessions on any thread.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "common/status.h"

namespace kinference::http {

struct TlsServerFiles {
  std::string cert_file;       // PEM certificate chain (leaf first)
  std::string key_file;        // PEM private key
  std::string client_ca_file;  // PEM CA bundle; non-empty: client certificates required
};

Result<std::shared_ptr<boost::asio::ssl::context>> MakeServerTlsContext(const TlsServerFiles& f);

// Changes whenever any of the files is replaced or rewritten (path, inode, size and
// modification time of each; a missing file stamps as missing). Symlinks are followed, so
// a Kubernetes Secret volume's atomic "..data" swap shows as a change.
std::string TlsFilesStamp(const TlsServerFiles& f);

}  // namespace kinference::http
