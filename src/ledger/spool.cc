#include "ledger/spool.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace kinference::ledger {
namespace fs = std::filesystem;

namespace {

Status Errno(const std::string& what) {
  return Status(ErrorCode::kUnavailable, "ledger spool: " + what + ": " + std::strerror(errno));
}

bool WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Spool::Spool(std::string dir, int64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

Spool::~Spool() { CloseCurrent(); }

void Spool::CloseCurrent() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  current_bytes_ = 0;
}

Status Spool::Open() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    return Status(ErrorCode::kUnavailable, "ledger spool: create " + dir_ + ": " + ec.message());
  std::vector<std::pair<uint64_t, std::string>> found;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("spool-") || !name.ends_with(".jsonl")) continue;
    try {
      found.emplace_back(std::stoull(name.substr(6, name.size() - 12)), e.path().string());
    } catch (...) {
    }
  }
  std::sort(found.begin(), found.end());
  segments_.clear();
  segment_records_.clear();
  segment_bytes_.clear();
  bytes_ = records_ = 0;
  for (const auto& [seq, path] : found) {
    std::ifstream in(path);
    int64_t lines = 0;
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) ++lines;
    int64_t size = static_cast<int64_t>(fs::file_size(path, ec));
    segments_.push_back(path);
    segment_records_.push_back(lines);
    segment_bytes_.push_back(size);
    bytes_ += size;
    records_ += lines;
    next_seq_ = std::max(next_seq_, seq + 1);
  }
  return Status::Ok();
}

Result<size_t> Spool::Append(const std::vector<accounting::UsageRecord>& records) {
  std::string data;
  size_t fit = 0;
  for (const auto& r : records) {
    std::string line = accounting::ToJsonLine(r) + "\n";
    if (bytes_ + static_cast<int64_t>(data.size() + line.size()) > max_bytes_) break;
    data += line;
    ++fit;
  }
  if (fit == 0) return size_t{0};
  if (fd_ < 0 || current_bytes_ >= kSegmentBytes) {
    CloseCurrent();
    std::string path = (fs::path(dir_) / fmt::format("spool-{:020d}.jsonl", next_seq_++)).string();
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd_ < 0) return Errno("open " + path);
    segments_.push_back(path);
    segment_records_.push_back(0);
    segment_bytes_.push_back(0);
    // The new file's directory entry must be durable too.
    int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }
  if (!WriteAll(fd_, data) || ::fdatasync(fd_) != 0) {
    Status s = Errno("append to " + segments_.back());
    // The segment may end in a partial line now: start a new one next time; replay skips
    // the cut line.
    CloseCurrent();
    return s;
  }
  const int64_t n = static_cast<int64_t>(data.size());
  current_bytes_ += n;
  bytes_ += n;
  records_ += static_cast<int64_t>(fit);
  segment_records_.back() += static_cast<int64_t>(fit);
  segment_bytes_.back() += n;
  return fit;
}

Status Spool::ReadOldest(std::vector<accounting::UsageRecord>& records, std::string& segment,
                         int64_t& corrupt) {
  records.clear();
  segment.clear();
  corrupt = 0;
  if (segments_.empty()) return Status::Ok();
  // Appends go to a new segment from now on, so the one read stays as read.
  if (segments_.size() == 1) CloseCurrent();
  segment = segments_.front();
  std::ifstream in(segment);
  if (!in) return Errno("read " + segment);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto r = accounting::FromJsonLine(line);
    if (r.ok()) {
      records.push_back(std::move(*r));
    } else {
      ++corrupt;
    }
  }
  return Status::Ok();
}

Status Spool::Remove(const std::string& segment) {
  auto it = std::find(segments_.begin(), segments_.end(), segment);
  if (it == segments_.end()) return Status::Ok();
  const size_t i = static_cast<size_t>(it - segments_.begin());
  if (i + 1 == segments_.size()) CloseCurrent();
  std::error_code ec;
  fs::remove(segment, ec);
  if (ec)
    return Status(ErrorCode::kUnavailable, "ledger spool: remove " + segment + ": " + ec.message());
  bytes_ -= segment_bytes_[i];
  records_ -= segment_records_[i];
  segments_.erase(segments_.begin() + static_cast<ptrdiff_t>(i));
  segment_records_.erase(segment_records_.begin() + static_cast<ptrdiff_t>(i));
  segment_bytes_.erase(segment_bytes_.begin() + static_cast<ptrdiff_t>(i));
  return Status::Ok();
}

}  // namespace kinference::ledger
