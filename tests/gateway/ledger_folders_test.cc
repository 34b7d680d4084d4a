// Gateway::Start refuses, naming the field and the folder, an accounting config whose
// ledger folders cannot be written (before, a SQLite file that could not be opened was
// "unreachable" and its records went to a spool that might not be writable either).
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>

#include "gateway/config/config.h"
#include "gateway/gateway.h"

namespace kinference::gateway {
namespace {

Result<uint16_t> StartWith(const std::string& accounting) {
  GatewayConfig c = ParseGatewayConfig(
      "listen: {port: 0}\npools: [{name: p, model: m, endpoints: ['http://127.0.0.1:1']}]\n" +
      accounting);
  boost::asio::io_context io;
  Gateway g(io, c);
  auto port = g.Start();
  g.Stop();
  return port;
}

TEST(LedgerFoldersTest, SqliteFolderThatCannotBeWrittenRefusesStartUp) {
  // A folder below a file cannot be created, whoever runs the test (root included).
  auto port = StartWith("accounting: {ledger: {sqlite_path: /dev/null/ledger/k.db}}");
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(port.status().message().find(
                "accounting.ledger.sqlite_path: the folder '/dev/null/ledger' cannot be written"),
            std::string::npos)
      << port.status().message();
  EXPECT_NE(port.status().message().find("gateway.persistence"), std::string::npos);
}

TEST(LedgerFoldersTest, SpoolFolderThatCannotBeWrittenRefusesStartUp) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kinference-ledger-folders-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto port = StartWith("accounting: {ledger: {sqlite_path: " + (dir / "k.db").string() +
                        ", spool_dir: /dev/null/spool}}");
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(port.ok());
  EXPECT_NE(
      port.status().message().find("accounting.ledger.spool_dir: the folder '/dev/null/spool'"),
      std::string::npos)
      << port.status().message();
}

TEST(LedgerFoldersTest, WritableFoldersStart) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kinference-ledger-ok-" + std::to_string(::getpid()));
  auto port =
      StartWith("accounting: {ledger: {sqlite_path: " + (dir / "sub" / "k.db").string() + "}}");
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(port.ok()) << port.status().message();
}

}  // namespace
}  // namespace kinference::gateway
