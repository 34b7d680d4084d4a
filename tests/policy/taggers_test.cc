#include "policy/taggers.h"

#include <gtest/gtest.h>

#include <set>

namespace kinference::policy {
namespace {

using V = std::vector<std::string>;

TEST(PiiTagger, Email) {
  EXPECT_EQ(PiiTags("write to alice.smith+x@mail.example.com today"), (V{"pii", "pii:email"}));
  EXPECT_EQ(PiiTags("an @mention and user@localhost and a@b.c"), V{});
}

TEST(PiiTagger, PaymentCardNeedsLuhn) {
  EXPECT_TRUE(LuhnValid("4111111111111111"));
  EXPECT_FALSE(LuhnValid("4111111111111112"));
  EXPECT_EQ(PiiTags("card 4111 1111 1111 1111 exp 12/29"), (V{"pii", "pii:payment_card"}));
  EXPECT_EQ(PiiTags("card 4111-1111-1111-1111."), (V{"pii", "pii:payment_card"}));
  EXPECT_EQ(PiiTags("card 4111 1111 1111 1112"), V{});
  EXPECT_EQ(PiiTags("order id 41111111111111110"), V{});  // 17 digits failing Luhn
}

TEST(PiiTagger, Ssn) {
  EXPECT_TRUE(IsSsn("123-45-6789"));
  EXPECT_FALSE(IsSsn("000-45-6789"));
  EXPECT_FALSE(IsSsn("666-45-6789"));
  EXPECT_FALSE(IsSsn("912-45-6789"));
  EXPECT_FALSE(IsSsn("123-00-6789"));
  EXPECT_FALSE(IsSsn("123-45-0000"));
  EXPECT_EQ(PiiTags("SSN: 123-45-6789"), (V{"pii", "pii:ssn"}));
  EXPECT_EQ(PiiTags("ref 666-45-6789"), V{});
}

TEST(PiiTagger, Iban) {
  EXPECT_TRUE(IbanValid("GB82WEST12345698765432"));
  EXPECT_TRUE(IbanValid("DE89370400440532013000"));
  EXPECT_FALSE(IbanValid("GB82WEST12345698765433"));
  auto tags = PiiTags("pay to GB82 WEST 1234 5698 7654 32 please");
  EXPECT_NE(std::find(tags.begin(), tags.end(), "pii:iban"), tags.end());
  tags = PiiTags("IBAN DE89370400440532013000.");
  EXPECT_EQ(tags, (V{"pii", "pii:iban"}));
  EXPECT_EQ(PiiTags("IBAN GB82 WEST 1234 5698 7654 33"), V{});
}

TEST(PiiTagger, Phone) {
  EXPECT_EQ(PiiTags("call +44 20 7946 0958"), (V{"pii", "pii:phone"}));
  EXPECT_EQ(PiiTags("call (555) 123-4567 now"), (V{"pii", "pii:phone"}));
  EXPECT_EQ(PiiTags("call 555.123.4567"), (V{"pii", "pii:phone"}));
  EXPECT_EQ(PiiTags("call 1-555-123-4567"), (V{"pii", "pii:phone"}));
  EXPECT_EQ(PiiTags("released 2024-01-05, version 1.2.3, 42 items, 3+4=7"), V{});
}

TEST(PiiTagger, IpAddresses) {
  EXPECT_EQ(PiiTags("host 192.168.1.10 is down"), (V{"pii", "pii:ip"}));
  EXPECT_EQ(PiiTags("host 999.168.1.10"), V{});
  EXPECT_EQ(PiiTags("v6 2001:db8::1 and fe80::1ff:fe23:4567:890a."), (V{"pii", "pii:ip"}));
  EXPECT_EQ(PiiTags("at 10:30:00 use std::vector"), V{});
}

TEST(PiiTagger, SeveralKinds) {
  EXPECT_EQ(PiiTags("bob@example.org, 123-45-6789, 10.0.0.1"),
            (V{"pii", "pii:email", "pii:ip", "pii:ssn"}));
  EXPECT_EQ(PiiTags(""), V{});
  EXPECT_EQ(PiiTags("What is the capital of France?"), V{});
}

// Random text over the detectors' alphabet: never crashes, only known tags come out.
TEST(PiiTagger, RandomInputYieldsOnlyKnownTags) {
  const std::string alphabet = "0123456789 -.()+:@abcDEFGBxyz";
  const std::set<std::string> known{"pii",     "pii:email", "pii:phone", "pii:payment_card",
                                    "pii:ssn", "pii:iban",  "pii:ip"};
  uint64_t state = 42;
  size_t tagged = 0;
  for (int n = 0; n < 2000; ++n) {
    std::string text;
    for (int k = 0; k < 120; ++k) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      text.push_back(alphabet[(state >> 33) % alphabet.size()]);
    }
    auto tags = PiiTags(text);
    tagged += tags.empty() ? 0 : 1;
    for (const auto& t : tags) EXPECT_TRUE(known.count(t)) << t;
    if (!tags.empty()) {
      EXPECT_EQ(tags.front(), "pii");
    }
  }
  EXPECT_GT(tagged, 0u);
}

TEST(TagHeader, ParsesAndSanitises) {
  EXPECT_EQ(ParseTagHeader(" Finance, pii:email ,,bad tag,x"), (V{"finance", "pii:email", "x"}));
  EXPECT_EQ(ParseTagHeader(""), V{});
}

TEST(RunTaggers, SimpleAndHeaderTrust) {
  TaggerConfig cfg;
  cfg.simple_max_prompt_tokens = 10;
  EXPECT_EQ(EstimateTokens("12345678"), 2);
  EXPECT_EQ(EstimateTokens("123456789"), 3);
  TaggerInput in{.text = "What is 2+2?", .tag_header = "team-a"};
  EXPECT_EQ(RunTaggers(cfg, in), V{"simple"});  // untrusted header ignored
  cfg.trust_tag_header = true;
  EXPECT_EQ(RunTaggers(cfg, in), (V{"simple", "team-a"}));
  in.tools_present = true;
  EXPECT_EQ(RunTaggers(cfg, in), V{"team-a"});
  in.tools_present = false;
  in.prompt_tokens = 11;
  EXPECT_EQ(RunTaggers(cfg, in), V{"team-a"});
  in.prompt_tokens = -1;
  in.text = "mail me: carol@example.net";
  EXPECT_EQ(RunTaggers(cfg, in), (V{"pii", "pii:email", "simple", "team-a"}));
  cfg.pii = false;
  cfg.simple = false;
  EXPECT_EQ(RunTaggers(cfg, in), V{"team-a"});
}

}  // namespace
}  // namespace kinference::policy
