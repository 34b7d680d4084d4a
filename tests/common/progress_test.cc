#include "common/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kinference {
namespace {

TEST(FormatProgress, ShowsDoneTotalPercentRateAndEta) {
  EXPECT_EQ(FormatProgress("bench", "requests", 120, 400, 24.0),
            "bench: 120/400 requests (30%), 5.0 requests/s, ETA 56 s");
}

TEST(FormatProgress, EtaInMinutesAndHours) {
  EXPECT_EQ(FormatProgress("sim", "requests", 10, 1000, 10.0),
            "sim: 10/1000 requests (1%), 1.0 requests/s, ETA 16m30s");
  EXPECT_EQ(FormatProgress("sim", "requests", 1, 10000, 1.0),
            "sim: 1/10000 requests (0%), 1.0 requests/s, ETA 2h46m");
}

TEST(FormatProgress, FinishedRunSaysHowLongItTook) {
  EXPECT_EQ(FormatProgress("bench", "requests", 400, 400, 80.0),
            "bench: 400/400 requests (100%), 5.0 requests/s, took 1m20s");
}

TEST(FormatProgress, NothingDoneYetHasUnknownEta) {
  EXPECT_EQ(FormatProgress("bench", "requests", 0, 10, 0.0),
            "bench: 0/10 requests (0%), 0.0 requests/s, ETA ?");
}

TEST(FormatProgress, UnknownTotalShowsCountAndRateOnly) {
  EXPECT_EQ(FormatProgress("bench", "requests", 7, 0, 2.0), "bench: 7 requests, 3.5 requests/s");
}

class ProgressLineTest : public ::testing::Test {
 protected:
  void SetUp() override { out_ = open_memstream(&buf_, &size_); }
  void TearDown() override {
    if (out_) std::fclose(out_);
    std::free(buf_);
  }
  std::string Written() {
    std::fflush(out_);
    return std::string(buf_, size_);
  }
  FILE* out_ = nullptr;
  char* buf_ = nullptr;
  size_t size_ = 0;
};

TEST_F(ProgressLineTest, RedrawsInPlaceAtMostOncePerInterval) {
  ProgressLine line(out_, "bench", "requests", 4, /*min_interval_s=*/1.0);
  line.Update(1, 0.5);  // first draw
  line.Update(2, 1.0);  // 0.5 s later: skipped
  line.Update(3, 1.6);  // 1.1 s later: drawn
  std::string w = Written();
  EXPECT_EQ(w,
            "\rbench: 1/4 requests (25%), 2.0 requests/s, ETA 2 s"
            "\rbench: 3/4 requests (75%), 1.9 requests/s, ETA 1 s");
}

TEST_F(ProgressLineTest, LastRequestIsAlwaysDrawnAndFinishEndsTheLine) {
  ProgressLine line(out_, "bench", "requests", 2, 10.0);
  line.Update(1, 1.0);
  line.Update(2, 2.0);  // done == total: drawn despite the interval
  line.Finish(2, 2.0);
  std::string w = Written();
  EXPECT_NE(w.find("\rbench: 2/2 requests (100%), 1.0 requests/s, took 2 s"), std::string::npos)
      << w;
  EXPECT_EQ(w.back(), '\n');
}

TEST_F(ProgressLineTest, ShorterLineBlanksTheRestOfTheLongerOne) {
  ProgressLine line(out_, "x", "r", 0, 0);
  line.Update(1000, 1.0);  // "x: 1000 r, 1000.0 r/s"
  line.Update(1, 1.0);     // "x: 1 r, 1.0 r/s" + padding
  std::string w = Written();
  std::string second = w.substr(w.rfind('\r') + 1);
  EXPECT_EQ(second.size(), std::string("x: 1000 r, 1000.0 r/s").size());
  EXPECT_EQ(second.find_last_not_of(' '), std::string("x: 1 r, 1.0 r/s").size() - 1);
}

TEST_F(ProgressLineTest, FinishWithoutAnyDrawWritesNothing) {
  ProgressLine line(out_, "bench", "requests", 3);
  line.Finish(0, 0);
  EXPECT_EQ(Written(), "");
}

}  // namespace
}  // namespace kinference
