// Spool: the bounded on-disk queue where usage records wait while the ledger store
// cannot be reached. Segment files spool-<seq>.jsonl in one directory, one record per
// line (accounting::ToJsonLine); each Append is written and fdatasync'ed before it
// returns, so a spooled record survives a crash of the process or of the machine.
// Replay reads the oldest segment whole; once its records are in the store the segment
// is deleted. A line cut short by a crash mid-append is skipped and counted (it was
// never acknowledged as spooled: the records of an interrupted Append are not counted as
// spooled either, since Append failed or never returned).
//
// Bound: at most max_bytes of segment data; records that do not fit are refused (the
// writer counts them as lost, reason spool_full). max_bytes 0 disables spooling.
//
// Thread-safety: not thread-safe; the ledger writer thread owns it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "accounting/usage_record.h"
#include "common/status.h"

namespace kinference::ledger {

class Spool {
 public:
  // A segment is closed for appends once it holds this many bytes.
  static constexpr int64_t kSegmentBytes = 4 << 20;

  Spool(std::string dir, int64_t max_bytes);
  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  // Creates the directory and counts what earlier runs left there.
  Status Open();
  // Appends as many of `records` as fit (in order); how many were appended and synced.
  Result<size_t> Append(const std::vector<accounting::UsageRecord>& records);
  // The oldest segment's parsable records (`segment` names it for Remove; `corrupt`
  // counts skipped lines); an empty segment name when the spool is empty.
  Status ReadOldest(std::vector<accounting::UsageRecord>& records, std::string& segment,
                    int64_t& corrupt);
  Status Remove(const std::string& segment);

  bool empty() const { return records_ == 0 && segments_.empty(); }
  int64_t bytes() const { return bytes_; }
  int64_t records() const { return records_; }
  const std::string& dir() const { return dir_; }

 private:
  void CloseCurrent();

  std::string dir_;
  int64_t max_bytes_;
  std::vector<std::string> segments_;  // oldest first
  std::vector<int64_t> segment_records_;
  std::vector<int64_t> segment_bytes_;
  int fd_ = -1;  // the newest segment, open for appends
  int64_t current_bytes_ = 0;
  uint64_t next_seq_ = 1;
  int64_t bytes_ = 0, records_ = 0;
};

}  // namespace kinference::ledger
