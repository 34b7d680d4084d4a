// KeysUnder and ConfigReferenceMarkdown (common/config_keys.h): the sections a parser
// accepts come from the table's paths, and the reference prints every row.
#include "common/config_keys.h"

#include <gtest/gtest.h>

#include <array>

namespace kinference {
namespace {

constexpr std::array kTable = std::to_array<ConfigKey>({
    {"listen", "map", "", "The listener."},
    {"listen.port", "integer", "8000", "Port."},
    {"listen.tls.cert_file", "path", "", "Certificate."},
    {"pools[]", "list", "", "Pools."},
    {"pools[].name", "string", "", "Name."},
    {"pools[].kv_events.tokenizer", "string", "", "Tokenizer."},
    {"limits.tenants.<tenant>.rpm", "integer", "", "Per tenant | per minute."},
});

TEST(ConfigKeysTest, KeysUnderASectionAreItsDirectChildren) {
  EXPECT_EQ(KeysUnder(kTable, ""), (std::set<std::string>{"limits", "listen", "pools"}));
  EXPECT_EQ(KeysUnder(kTable, "listen"), (std::set<std::string>{"port", "tls"}));
  EXPECT_EQ(KeysUnder(kTable, "listen.tls"), (std::set<std::string>{"cert_file"}));
  EXPECT_EQ(KeysUnder(kTable, "pools[]"), (std::set<std::string>{"kv_events", "name"}));
  // A user's key (<tenant>) is no key of the section.
  EXPECT_TRUE(KeysUnder(kTable, "limits.tenants").empty());
  // A prefix of a name is not its section.
  EXPECT_TRUE(KeysUnder(kTable, "list").empty());
  EXPECT_TRUE(KeysUnder(kTable, "listen.port").empty());
}

TEST(ConfigKeysTest, ReferenceHasOneRowPerKeyWithPipesEscaped) {
  std::string md = ConfigReferenceMarkdown(kTable, "T", "Intro.");
  EXPECT_TRUE(
      md.starts_with("# T\n\nIntro.\n\n| Key | Type | Default | Meaning |\n|---|---|---|---|\n"));
  EXPECT_NE(md.find("| `listen.port` | integer | `8000` | Port. |\n"), std::string::npos);
  EXPECT_NE(md.find("| `pools[].name` | string |  | Name. |\n"), std::string::npos);
  EXPECT_NE(md.find("Per tenant \\| per minute."), std::string::npos);
  size_t rows = 0;
  for (size_t at = md.find("\n| `"); at != std::string::npos; at = md.find("\n| `", at + 1)) ++rows;
  EXPECT_EQ(rows, kTable.size());
}

}  // namespace
}  // namespace kinference
