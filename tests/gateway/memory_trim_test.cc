// MemoryTrimmer (gateway/memory_trim.h): when the gateway gives freed heap memory back to
// the OS. TrimPolicy's samples are deterministic; the trimmer runs it on a timer with the
// hooks it is given.
#include "gateway/memory_trim.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <vector>

namespace kinference::gateway {
namespace {

constexpr size_t kMiB = 1u << 20;

// After a load falls to half its peak or less, with enough free heap and enough more
// resident than after the last trim: trim; then the peak starts again from the load at
// the trim.
TEST(TrimPolicyTest, TrimsOnceTheLoadFellToHalfItsPeakWithEnoughFreeHeap) {
  TrimPolicy p(MemoryTrimOptions{5, 4 * kMiB});
  EXPECT_FALSE(p.Sample(0, 0, 2 * kMiB));
  EXPECT_FALSE(p.Sample(200, 60 * kMiB, 70 * kMiB));  // at the peak: freed chunks are reused
  EXPECT_FALSE(p.Sample(150, 60 * kMiB, 70 * kMiB));  // still above half of it
  EXPECT_TRUE(p.Sample(100, 60 * kMiB, 70 * kMiB));   // half: the load fell
  p.Trimmed(20 * kMiB);
  EXPECT_FALSE(p.Sample(100, 60 * kMiB, 30 * kMiB));  // the peak is 100 now
  EXPECT_TRUE(p.Sample(0, 60 * kMiB, 30 * kMiB));     // idle, 10 MiB more resident
  p.Trimmed(5 * kMiB);
  // Idle, the trimmed chunks still counted free, nothing more resident: no trim again.
  EXPECT_FALSE(p.Sample(0, 60 * kMiB, 5 * kMiB));
  EXPECT_FALSE(p.Sample(0, 60 * kMiB, 9 * kMiB - 1));
  EXPECT_TRUE(p.Sample(0, 60 * kMiB, 9 * kMiB));
}

TEST(TrimPolicyTest, NeverTrimsASmallFreeHeap) {
  TrimPolicy p(MemoryTrimOptions{5, 4 * kMiB});
  EXPECT_FALSE(p.Sample(100, 60 * kMiB, 70 * kMiB));
  EXPECT_FALSE(p.Sample(0, 4 * kMiB - 1, 70 * kMiB));
  EXPECT_TRUE(p.Sample(0, 4 * kMiB, 70 * kMiB));  // the peak (100) still counts
}

// Without a resident figure (0: /proc unreadable) the free heap and the load decide.
TEST(TrimPolicyTest, UnknownResidentMemoryIsNoCondition) {
  TrimPolicy p(MemoryTrimOptions{5, 4 * kMiB});
  EXPECT_TRUE(p.Sample(0, 8 * kMiB, 0));
  p.Trimmed(0);
  EXPECT_TRUE(p.Sample(0, 8 * kMiB, 0));
}

// The trimmer samples on its timer and trims through its hook; Stop ends the sampling.
TEST(MemoryTrimmerTest, SamplesOnItsTimerAndTrimsThroughItsHook) {
  boost::asio::io_context io;
  size_t active = 8, free_bytes = 64 * kMiB;
  int samples = 0, trims = 0;
  MemoryTrimHooks hooks;
  hooks.active_requests = [&] {
    ++samples;
    if (samples == 3) active = 0;  // the load falls at the third sample
    return active;
  };
  hooks.free_heap_bytes = [&] { return free_bytes; };
  hooks.resident_anon_bytes = [&] { return free_bytes + 2 * kMiB; };
  hooks.trim = [&] {
    ++trims;
    free_bytes = 0;
  };
  auto trimmer =
      std::make_shared<MemoryTrimmer>(io.get_executor(), hooks, MemoryTrimOptions{0.001, 4 * kMiB});
  trimmer->Start();
  while (samples < 6) io.run_one();
  EXPECT_EQ(trims, 1);
  EXPECT_EQ(trimmer->trims(), 1u);
  trimmer->Stop();
  io.run();  // nothing left: the timer was cancelled
  EXPECT_EQ(samples, 6);
}

// The default hooks are glibc's: what is freed shows in HeapFreeBytes, and TrimHeap runs.
// A sanitizer build replaces glibc's malloc (mallinfo2 reports nothing), so there the
// test has nothing to observe.
TEST(MemoryTrimmerTest, HeapFreeBytesSeesFreedChunks) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizer's allocator replaces glibc malloc; mallinfo2 sees nothing";
#endif
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 4096; ++i) blocks.emplace_back(new char[1024]);
  auto keep = std::make_unique<char[]>(1024);  // above them: the top cannot shrink
  const size_t before = MemoryTrimmer::HeapFreeBytes();
  blocks.clear();
  EXPECT_GE(MemoryTrimmer::HeapFreeBytes(), before + 4096 * 1024 / 2);
  MemoryTrimmer::TrimHeap();
}

TEST(MemoryTrimmerTest, ResidentAnonBytesReadsTheProcess) {
  const size_t before = MemoryTrimmer::ResidentAnonBytes();
  ASSERT_GT(before, 0u);
  std::vector<char> touched(16 * kMiB, 1);  // 16 MiB written: resident and anonymous
  EXPECT_GE(MemoryTrimmer::ResidentAnonBytes(), before + 8 * kMiB);
  EXPECT_EQ(touched[12345], 1);
}

}  // namespace
}  // namespace kinference::gateway
