// The pii tagger sees through the ordinary ways of writing PII differently (issue #12):
// encodings, Unicode forms, invisible characters, other scripts' digits, values split
// across neighbouring messages, SSNs and phone numbers beyond the canonical format, and
// e-mail addresses with spaced or bracketed at/dot. Each case also has a look-alike that
// must stay untagged.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "policy/request_text.h"
#include "policy/scan_normalize.h"
#include "policy/taggers.h"

namespace kinference::policy {
namespace {

using V = std::vector<std::string>;

bool Has(const V& tags, const std::string& t) {
  return std::find(tags.begin(), tags.end(), t) != tags.end();
}

TEST(ScanNormalize, PlainAsciiNeedsNothing) {
  EXPECT_FALSE(NeedsScanNormalization("What is the capital of France? 42 items."));
  EXPECT_TRUE(NeedsScanNormalization("100%"));
  EXPECT_TRUE(NeedsScanNormalization("a &amp; b"));
  EXPECT_TRUE(NeedsScanNormalization("caf\xC3\xA9"));
}

TEST(ScanNormalize, UndoesEscapesUnicodeFormsAndInvisibleCharacters) {
  EXPECT_EQ(NormalizeForScan("alice%40example.com"), "alice@example.com");
  EXPECT_EQ(NormalizeForScan("alice%2540example.com"), "alice@example.com");  // twice encoded
  EXPECT_EQ(NormalizeForScan("a&#64;b&#x2E;c&commat;d&period;e&amp;#64;"), "a@b.c@d.e@");
  EXPECT_EQ(NormalizeForScan("x&#64y"), "x@y");  // numeric reference without ';'
  EXPECT_EQ(NormalizeForScan("a\\u0040b \\ud83d\\ude00"), "a@b \xF0\x9F\x98\x80");
  // Full-width letters, digits, '@', '.', '%'.
  EXPECT_EQ(NormalizeForScan("\xEF\xBD\x81\xEF\xBC\xA0\xEF\xBD\x82\xEF\xBC\x8E\xEF\xBC\x91"),
            "a@b.1");
  EXPECT_EQ(NormalizeForScan("a\xEF\xBC\x85\xEF\xBC\x94\xEF\xBC\x90"
                             "b"),
            "a@b");
  // Zero-width space, word joiner, soft hyphen, BOM, right-to-left override: removed.
  EXPECT_EQ(NormalizeForScan("4\xE2\x80\x8B"
                             "1\xE2\x81\xA0"
                             "1\xC2\xAD"
                             "1\xEF\xBB\xBF"
                             "2\xE2\x80\xAE"
                             "3"),
            "411123");
  // Arabic-Indic, Devanagari and Thai digits; en dash, non-breaking and thin spaces.
  EXPECT_EQ(NormalizeForScan("\xD9\xA4\xD9\xA1 \xE0\xA5\xA8\xE0\xA5\xA9 \xE0\xB9\x95"), "41 23 5");
  EXPECT_EQ(NormalizeForScan("1\xE2\x80\x93"
                             "2\xC2\xA0"
                             "3\xE2\x80\x89"
                             "4"),
            "1-2 3 4");
  // Letters with an ASCII look-alike become it (UTS #39 skeleton: é -> e, Cyrillic а ->
  // a); others are kept (Cyrillic д).
  EXPECT_EQ(NormalizeForScan("caf\xC3\xA9 \xD0\xB4\xD0\xB0"),
            "cafe \xD0\xB4"
            "a");
  // Invalid UTF-8 does not crash and matches nothing.
  EXPECT_EQ(PiiTags("\xFF\xFE\x80 %G0 &#xZZ; \\u12"), V{});
}

TEST(PiiObfuscation, EncodedEmail) {
  for (const char* text : {"mail alice%40example.com", "mail alice&#64;example.com",
                           "mail alice&commat;example&period;com", "mail alice\\u0040example.com",
                           "mail alice%2540example.com", "mail alice&amp;#64;example.com"}) {
    EXPECT_EQ(PiiTags(text), (V{"pii", "pii:email"})) << text;
  }
  EXPECT_EQ(PiiTags("discount 100%40 off, fish &amp; chips"), V{});
}

TEST(PiiObfuscation, FullWidthAndOtherScripts) {
  // ａｌｉｃｅ＠ｅｘａｍｐｌｅ．ｃｏｍ
  EXPECT_EQ(PiiTags("\xEF\xBD\x81\xEF\xBD\x8C\xEF\xBD\x89\xEF\xBD\x83\xEF\xBD\x85\xEF\xBC\xA0\xEF"
                    "\xBD\x85\xEF\xBD\x98\xEF\xBD\x81\xEF\xBD\x8D\xEF\xBD\x90\xEF\xBD\x8C\xEF\xBD"
                    "\x85\xEF\xBC\x8E\xEF\xBD\x83\xEF\xBD\x8F\xEF\xBD\x8D"),
            (V{"pii", "pii:email"}));
  // alice＠example.com (only the at sign full-width)
  EXPECT_EQ(PiiTags("alice\xEF\xBC\xA0"
                    "example.com"),
            (V{"pii", "pii:email"}));
  // ４１１１ １１１１ １１１１ １１１１
  std::string fw;
  for (char c : std::string("4111 1111 1111 1111")) {
    if (c == ' ') {
      fw += ' ';
    } else {
      fw += "\xEF\xBC";
      fw += static_cast<char>(0x90 + (c - '0'));
    }
  }
  EXPECT_EQ(PiiTags("card " + fw), (V{"pii", "pii:payment_card"}));
  // ٤١١١ ١١١١ ١١١١ ١١١١ (Arabic-Indic)
  std::string ar;
  for (char c : std::string("4111 1111 1111 1111")) {
    if (c == ' ') {
      ar += ' ';
    } else {
      ar += "\xD9";
      ar += static_cast<char>(0xA0 + (c - '0'));
    }
  }
  EXPECT_EQ(PiiTags("card " + ar), (V{"pii", "pii:payment_card"}));
  // १२३-४५-६७८९ (Devanagari SSN); ①②③-④⑤-⑥⑦⑧⑨ (circled digits, NFKC)
  EXPECT_EQ(PiiTags("\xE0\xA5\xA7\xE0\xA5\xA8\xE0\xA5\xA9-\xE0\xA5\xAA\xE0\xA5\xAB-\xE0\xA5\xAC"
                    "\xE0\xA5\xAD\xE0\xA5\xAE\xE0\xA5\xAF"),
            (V{"pii", "pii:ssn"}));
  EXPECT_EQ(PiiTags("\xE2\x91\xA0\xE2\x91\xA1\xE2\x91\xA2-\xE2\x91\xA3\xE2\x91\xA4-\xE2\x91\xA5\xE2"
                    "\x91\xA6\xE2\x91\xA7\xE2\x91\xA8"),
            (V{"pii", "pii:ssn"}));
  // Full-width text without PII stays untagged.
  EXPECT_EQ(PiiTags("\xEF\xBC\xA8\xEF\xBD\x85\xEF\xBD\x8C\xEF\xBD\x8C\xEF\xBD\x8F 2024"), V{});
}

TEST(PiiObfuscation, ZeroWidthCharactersInsideValues) {
  EXPECT_EQ(PiiTags("card 4111\xE2\x80\x8B"
                    "1111\xE2\x80\x8B"
                    "1111\xE2\x80\x8B"
                    "1111"),
            (V{"pii", "pii:payment_card"}));
  EXPECT_EQ(PiiTags("al\xE2\x80\x8D"
                    "ice@exa\xE2\x81\xA0"
                    "mple.com"),
            (V{"pii", "pii:email"}));
  EXPECT_EQ(PiiTags("SSN 123-\xC2\xAD"
                    "45-6789"),
            (V{"pii", "pii:ssn"}));
}

TEST(PiiObfuscation, SsnWithoutDashes) {
  EXPECT_EQ(PiiTags("SSN: 123456789"), (V{"pii", "pii:ssn"}));
  EXPECT_EQ(PiiTags("my social security number is 123456789."), (V{"pii", "pii:ssn"}));
  EXPECT_EQ(PiiTags("Ssn#123456789"), (V{"pii", "pii:ssn"}));
  EXPECT_EQ(PiiTags("id 123 45 6789"), (V{"pii", "pii:ssn"}));
  EXPECT_EQ(PiiTags("id 123.45.6789"), (V{"pii", "pii:ssn"}));
  // No SSN context, never-issued ranges, or the word only inside another word.
  EXPECT_EQ(PiiTags("order 123456789 shipped"), V{});
  EXPECT_EQ(PiiTags("SSN: 666456789 or 000 12 3456"), V{});
  EXPECT_EQ(PiiTags("businessNumber 123456789"), V{});
  EXPECT_EQ(PiiTags("SSN: 12345678901"), V{});
}

TEST(PiiObfuscation, InternationalPhoneNumbers) {
  for (const char* text :
       {"call 0044 20 7946 0958", "call 011 44 20 7946 0958", "ring 020 7946 0958 today",
        "tel. 06 12 34 56 78", "+49 (0)30 12345678", "Mobil 030-12345678", "phone: 4420794609",
        "my cell is 442079460958", "+33 6 12 34 56 78", "+86 138 1234 5678"}) {
    EXPECT_EQ(PiiTags(text), (V{"pii", "pii:phone"})) << text;
  }
  for (const char* text : {"released 2024-01-05, version 1.2.3", "0.5 1.5 2.5", "dated 01.02.2024",
                           "total 4420794609 rows", "items 01 02 03"}) {
    EXPECT_EQ(PiiTags(text), V{}) << text;
  }
}

TEST(PiiObfuscation, SpacedOrBracketedAtAndDot) {
  for (const char* text :
       {"alice [at] example [dot] com", "alice(at)example(dot)com", "alice at example dot com",
        "alice @ example . com", "alice AT example DOT co DOT uk", "alice{at}example{.}org",
        "alice <at> example.com", "j.doe at example.com", "alice@example[.]com",
        "bob [@] mail (.) example . net"}) {
    EXPECT_EQ(PiiTags(text), (V{"pii", "pii:email"})) << text;
  }
  for (const char* text :
       {"look at example.com for details", "meet at 5 dot 30", "hi @bob.dev, thanks",
        "I'm at home. Com on", "at last. dot", "email at example", "a [at] b"}) {
    EXPECT_EQ(PiiTags(text), V{}) << text;
  }
}

// Chat bodies whose PII is split between two messages or two fields.
TEST(PiiObfuscation, ValueSplitAcrossNeighbouringMessagesOrFields) {
  auto tags = [](const char* body) {
    RequestScan scan = ScanRequest(std::string_view(body));
    return PiiTags(scan.text, scan.values);
  };
  EXPECT_EQ(tags(R"({"model":"m","messages":[
      {"role":"user","content":"my card is 4111 1111"},
      {"role":"user","content":"1111 1111"}]})"),
            (V{"pii", "pii:payment_card"}));
  EXPECT_EQ(tags(R"({"model":"m","messages":[
      {"role":"user","content":"write to alice"},
      {"role":"user","content":[{"type":"text","text":"@example.com"}]}]})"),
            (V{"pii", "pii:email"}));
  EXPECT_EQ(tags(R"({"model":"m","metadata":{"a":"SSN 123-45-","b":"6789"}})"),
            (V{"pii", "pii:ssn"}));
  // Without the split check neither half is PII.
  RequestScan scan = ScanRequest(std::string_view(
      R"({"model":"m","messages":[{"role":"user","content":"my card is 4111 1111"},{"role":"user","content":"1111 1111"}]})"));
  EXPECT_EQ(PiiTags(scan.text), V{});
  // Neighbours that do not form PII stay untagged.
  EXPECT_EQ(tags(R"({"model":"m","messages":[
      {"role":"user","content":"I have 12 apples"},
      {"role":"assistant","content":"34 pears"}]})"),
            V{});
}

TEST(RequestScan, ValuesSkipKeysAndStructuralFields) {
  RequestScan scan = ScanRequest(std::string_view(
      R"({"model":"m","messages":[{"role":"user","content":"a"},{"role":"tool","tool_call_id":"c1","content":"b"}],"n":2})"));
  std::vector<std::string> values;
  for (const auto& v : scan.values) values.push_back(scan.text.substr(v.offset, v.size));
  EXPECT_EQ(values, (V{"m", "a", "b", "2"}));
  EXPECT_TRUE(scan.unscannable.empty());
}

TEST(RequestScan, RecordsContentTaggersCannotRead) {
  auto kinds = [](const char* body) { return ScanRequest(std::string_view(body)).unscannable; };
  EXPECT_EQ(
      kinds(
          R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}}]}]})"),
      V{"image"});
  EXPECT_EQ(
      kinds(
          R"({"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}},{"type":"file","file":{"file_id":"f"}}]}]})"),
      (V{"audio", "file"}));
  EXPECT_EQ(
      kinds(
          R"({"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"AAAA"}}]}]})"),
      (V{"file", "image"}));
  EXPECT_EQ(
      kinds(
          R"({"messages":[{"role":"user","content":[{"type":"document","source":{"type":"url","url":"https://x/a.pdf"}}]}]})"),
      V{"file"});
  // Text documents are read, not flagged.
  EXPECT_EQ(
      kinds(
          R"({"messages":[{"role":"user","content":[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"hi"}},{"type":"document","source":{"type":"base64","media_type":"text/plain","data":"aGk="}},{"type":"text","text":"hi"}]}]})"),
      V{});
}

TEST(RequestScan, RecordsTokenIdAndEmbeddingPromptsAsUnscannable) {
  auto kinds = [](const char* body) { return ScanRequest(std::string_view(body)).unscannable; };
  EXPECT_EQ(kinds(R"({"model":"m","prompt":[19,4111,1111]})"), V{"tokens"});
  EXPECT_EQ(kinds(R"({"model":"m","prompt":[[19,4111],[1111]]})"), V{"tokens"});
  EXPECT_EQ(kinds(R"({"model":"m","prompt":"x","prompt_embeds":"AAAA"})"), V{"embeddings"});
  // Text prompts and a null prompt_embeds are read as usual; only the top level counts.
  EXPECT_EQ(kinds(R"({"model":"m","prompt":["a","b"],"prompt_embeds":null})"), V{});
  EXPECT_EQ(kinds(R"({"model":"m","messages":[{"role":"user","content":"hi"}],)"
                  R"("metadata":{"prompt":[1,2]}})"),
            V{});
  // The same through the object overload the gateway uses.
  auto body = boost::json::parse(R"({"model":"m","prompt":[1,2]})").as_object();
  EXPECT_EQ(ScanRequest(body).unscannable, V{"tokens"});
}

TEST(RunTaggers, PiiJoinsNeighbouringValues) {
  RequestScan scan = ScanRequest(std::string_view(
      R"({"messages":[{"role":"user","content":"SSN 123-45"},{"role":"user","content":"-6789"}]})"));
  TaggerConfig cfg;
  cfg.simple = false;
  TaggerInput in{.text = scan.text, .values = scan.values};
  EXPECT_EQ(RunTaggers(cfg, in), (V{"pii", "pii:ssn"}));
  in.values = {};
  EXPECT_EQ(RunTaggers(cfg, in), V{});
}

}  // namespace
}  // namespace kinference::policy
