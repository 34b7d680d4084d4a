#include "common/redact.h"

#include <gtest/gtest.h>

namespace kinference {
namespace {

TEST(RedactSecrets, KnownSecretsAndPublishedKeyShapes) {
  std::vector<std::string> known{"prov-key-0123456789"};
  EXPECT_EQ(RedactSecrets("bad key prov-key-0123456789 used twice: prov-key-0123456789", known),
            "bad key [REDACTED] used twice: [REDACTED]");
  EXPECT_EQ(RedactSecrets("Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuvwx."),
            "Incorrect API key provided: [REDACTED].");
  EXPECT_EQ(RedactSecrets("key sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA end"), "key [REDACTED] end");
  EXPECT_EQ(RedactSecrets("aws AKIAIOSFODNN7EXAMPLE x"), "aws [REDACTED] x");
  EXPECT_EQ(RedactSecrets("Authorization: Bearer abc.def-ghi"), "Authorization: [REDACTED]");
  EXPECT_EQ(RedactSecrets("sent Bearer abc.def-ghi"), "sent Bearer [REDACTED]");
  EXPECT_EQ(RedactSecrets(R"({"api_key": "s3cr3t", "x": 1})"),
            R"({"api_key": "[REDACTED]", "x": 1})");
  EXPECT_EQ(RedactSecrets("GET /v1?token=abc&x=1"), "GET /v1?token=[REDACTED]&x=1");
  EXPECT_EQ(RedactSecrets("password=hunter2\nnext"), "password=[REDACTED]\nnext");
  EXPECT_EQ(RedactSecrets("db postgres://app:pw@10.0.0.5:5432/x"),
            "db postgres://[REDACTED]@10.0.0.5:5432/x");
}

TEST(RedactSecrets, LeavesOrdinaryTextAlone) {
  for (const char* s : {"The model `m` does not exist.", "tokens: 42 and a secretary", "sk-short",
                        "https://example.com/path", "task-1234 bearer of news", "max_tokens=16"}) {
    EXPECT_EQ(RedactSecrets(s), s);
  }
}

TEST(RedactSecrets, BoundsTheOutput) {
  std::string big(100000, 'x');
  std::string out = RedactSecrets(big);
  EXPECT_EQ(out.substr(0, kMaxRedactedBytes), big.substr(0, kMaxRedactedBytes));
  EXPECT_NE(out.find("[95904 more bytes]"), std::string::npos);
  EXPECT_LT(out.size(), kMaxRedactedBytes + 64);
}

}  // namespace
}  // namespace kinference
