#include "ledger/spool.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ledger_test_util.h"

namespace kinference::ledger {
namespace {

using testutil::Record;

TEST(Spool, KeepsRecordsAcrossReopenAndReplaysOldestFirst) {
  testutil::TempDir dir;
  {
    Spool spool(dir.path(), 1 << 20);
    ASSERT_TRUE(spool.Open().ok());
    EXPECT_TRUE(spool.empty());
    ASSERT_EQ(*spool.Append({Record(1), Record(2)}), 2u);
    ASSERT_EQ(*spool.Append({Record(3)}), 1u);
    EXPECT_EQ(spool.records(), 3);
  }
  Spool spool(dir.path(), 1 << 20);
  ASSERT_TRUE(spool.Open().ok());  // a later run finds them
  EXPECT_EQ(spool.records(), 3);
  ASSERT_EQ(*spool.Append({Record(4)}), 1u);  // goes to a new segment
  std::vector<accounting::UsageRecord> got;
  std::string segment;
  int64_t corrupt = 0;
  ASSERT_TRUE(spool.ReadOldest(got, segment, corrupt).ok());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2], Record(3));
  ASSERT_TRUE(spool.Remove(segment).ok());
  ASSERT_TRUE(spool.ReadOldest(got, segment, corrupt).ok());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], Record(4));
  ASSERT_TRUE(spool.Remove(segment).ok());
  EXPECT_TRUE(spool.empty());
  EXPECT_EQ(spool.bytes(), 0);
}

TEST(Spool, RefusesRecordsBeyondItsBound) {
  testutil::TempDir dir;
  const int64_t one = static_cast<int64_t>(accounting::ToJsonLine(Record(1)).size() + 1);
  Spool spool(dir.path(), one * 2 + one / 2);
  ASSERT_TRUE(spool.Open().ok());
  EXPECT_EQ(*spool.Append({Record(1), Record(2), Record(3)}), 2u);
  EXPECT_EQ(*spool.Append({Record(4)}), 0u);
  EXPECT_LE(spool.bytes(), one * 2 + one / 2);
}

TEST(Spool, SkipsALineCutShortByACrashAndCountsIt) {
  testutil::TempDir dir;
  {
    Spool spool(dir.path(), 1 << 20);
    ASSERT_TRUE(spool.Open().ok());
    ASSERT_EQ(*spool.Append({Record(1)}), 1u);
  }
  // A crash in the middle of the next append.
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    std::ofstream out(e.path(), std::ios::app);
    std::string line = accounting::ToJsonLine(Record(2));
    out << line.substr(0, line.size() / 2);
  }
  Spool spool(dir.path(), 1 << 20);
  ASSERT_TRUE(spool.Open().ok());
  std::vector<accounting::UsageRecord> got;
  std::string segment;
  int64_t corrupt = 0;
  ASSERT_TRUE(spool.ReadOldest(got, segment, corrupt).ok());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], Record(1));
  EXPECT_EQ(corrupt, 1);
}

}  // namespace
}  // namespace kinference::ledger
