// Homoglyphs and split turns (issue 25 items 7 and 8): e-mail addresses and numbers
// written with look-alike letters of other scripts (Cyrillic, Greek) read as the ASCII
// they imitate (UTS #39 skeleton, policy/scan_normalize.h), and a datum split across one
// role's turns with another role's turn between them is found (policy/pii.h). Each case
// has look-alikes that must stay untagged.
#include <gtest/gtest.h>

#include "policy/pii.h"
#include "policy/request_text.h"
#include "policy/scan_normalize.h"
#include "policy/taggers.h"

namespace kinference::policy {
namespace {

using V = std::vector<std::string>;

// Mixed-script addresses: Cyrillic а (U+0430), е (U+0435), о (U+043E), р (U+0440),
// с (U+0441), х (U+0445), і (U+0456); Greek ο (U+03BF), α (U+03B1), ν (U+03BD), Ε (U+0395).
TEST(PiiHomoglyph, MixedScriptEmailAddressesAreEmails) {
  const char* corpus[] = {
      "write to alice@ex\u0430mple.com today",  // Cyrillic a in the domain
      "bob@gm\u0430il.c\u043Em",                // Cyrillic a and o
      "\u0430l\u0456\u0441\u0435@\u0435\u0445\u0430m\u0440l\u0435.\u0441\u043Em",  // all Cyrillic
      "j\u03BFhn.d\u03BFe@example.\u03BFrg",                                       // Greek omicron
      "\u0395ve@corp.example",                                   // Greek capital epsilon
      "m\u03B1ri\u03B1@ex\u0430mple.co.uk",                      // Greek alpha, Cyrillic a
      "contact: sup\u0440\u043Ert [at] ex\u0430mple [dot] com",  // obfuscated too
  };
  for (const char* text : corpus) {
    EXPECT_EQ(PiiTags(text), (V{"pii", "pii:email"})) << text << " -> " << NormalizeForScan(text);
  }
}

// Digits written as letters that look like them: Cyrillic І (U+0406) for 1, Greek Ο
// (U+039F) and Cyrillic О (U+041E) for 0, Cyrillic З (U+0417) for 3.
TEST(PiiHomoglyph, ConfusableDigitsInNumbersAreDigits) {
  EXPECT_EQ(PiiTags("card 4\u0406\u0406\u0406 \u0406\u0406\u0406\u0406 1111 1111"),
            (V{"pii", "pii:payment_card"}));
  EXPECT_EQ(PiiTags("card 55\u039F\u039F \u039F\u039F\u039F\u039F \u041E\u041E\u041E\u041E "
                    "\u039F\u039F\u039F4"),
            (V{"pii", "pii:payment_card"}));
  EXPECT_EQ(PiiTags("SSN 12\u0417-45-6789"), (V{"pii", "pii:ssn"}));
  EXPECT_EQ(PiiTags("\u0406\u0406\u0406\u0406 1111 4111 1112"), V{});  // not Luhn-valid
}

TEST(PiiHomoglyph, TextOfOtherScriptsStaysUntagged) {
  const char* corpus[] = {
      "\u041F\u0440\u0438\u0432\u0435\u0442, \u043A\u0430\u043A \u0434\u0435\u043B\u0430? "
      "\u0412\u0441\u0442\u0440\u0435\u0447\u0430 \u0432 10:00",        // Russian prose and a time
      "\u041E\u041E\u041E \u0420\u043E\u043C\u0430\u0448\u043A\u0430",  // ООО Ромашка
      "\u0391\u03B8\u03AE\u03BD\u03B1 2024",                            // Αθήνα 2024
      "caf\u00E9 cr\u00E8me \u00E0 10 \u20AC",
      "\u0406\u0406 \u041E\u041E 12",
  };
  for (const char* text : corpus) EXPECT_EQ(PiiTags(text), V{}) << text;
}

TEST(PiiHomoglyph, NormalizeMapsLookAlikesToAscii) {
  EXPECT_EQ(NormalizeForScan("\u0430l\u0456\u0441\u0435"), "alice");
  EXPECT_EQ(NormalizeForScan("4\u0406\u0406\u0406"), "4111");
  EXPECT_EQ(NormalizeForScan("\u041E\u0406\u0430"), "Ola");  // letters around: letters
  // A character without an ASCII look-alike is kept.
  EXPECT_EQ(NormalizeForScan("\u4E2D"), "\u4E2D");
}

// A card or SSN split across the user's turns with the assistant's turn between them.
TEST(PiiSplitTurns, RoleTurnsAreJoinedAcrossTheOtherRole) {
  auto tags = [](const char* body) {
    RequestScan scan = ScanRequest(std::string_view(body));
    TaggerConfig cfg;
    cfg.simple = false;
    TaggerInput in{.text = scan.text, .values = scan.values, .role_values = scan.role_values};
    return RunTaggers(cfg, in);
  };
  EXPECT_EQ(tags(R"({"model":"m","messages":[
      {"role":"user","content":"my card is 4111 1111"},
      {"role":"assistant","content":"Go on."},
      {"role":"user","content":"1111 1111"}]})"),
            (V{"pii", "pii:payment_card"}));
  EXPECT_EQ(tags(R"({"model":"m","max_tokens":8,"messages":[
      {"role":"user","content":[{"type":"text","text":"my SSN is 123-45"}]},
      {"role":"assistant","content":[{"type":"text","text":"and the rest?"}]},
      {"role":"user","content":[{"type":"text","text":"-6789"}]}]})"),
            (V{"pii", "pii:ssn"}));
  // Split over the assistant's turns (the user's between them) too.
  EXPECT_EQ(tags(R"({"model":"m","messages":[
      {"role":"assistant","content":"Your card is 4111 1111"},
      {"role":"user","content":"ok"},
      {"role":"assistant","content":"1111 1111 on file."}]})"),
            (V{"pii", "pii:payment_card"}));
  // Turns that do not form PII stay untagged.
  EXPECT_EQ(tags(R"({"model":"m","messages":[
      {"role":"user","content":"I have 12 apples"},
      {"role":"assistant","content":"ok"},
      {"role":"user","content":"34 pears"}]})"),
            V{});
}

TEST(PiiSplitTurns, ScanGroupsValuesByRoleInOrder) {
  RequestScan scan = ScanRequest(std::string_view(R"({"model":"m","messages":[
      {"role":"user","content":"a"},{"role":"assistant","content":"b"},
      {"role":"user","content":[{"type":"text","text":"c"}]}]})"));
  ASSERT_EQ(scan.role_values.size(), 2u);
  auto text = [&](const TextSpan& s) { return scan.text.substr(s.offset, s.size); };
  ASSERT_EQ(scan.role_values[0].size(), 2u);
  EXPECT_EQ(text(scan.role_values[0][0]), "a");
  EXPECT_EQ(text(scan.role_values[0][1]), "c");
  ASSERT_EQ(scan.role_values[1].size(), 1u);
  EXPECT_EQ(text(scan.role_values[1][0]), "b");
}

}  // namespace
}  // namespace kinference::policy
