// Progress line for long command-line runs (`kinference bench`, `kinference simulate`):
//   "bench: 120/400 requests (30%), 5.2 requests/s, ETA 54 s"
// rewritten in place (carriage return) on a terminal, at most every `min_interval_s`, and
// ended with a newline by Finish(). Given no stream (stderr is not a terminal: CI logs,
// pipes, files), it writes nothing.
//
// Units: `elapsed_s` is wall seconds since the run began, supplied by the caller (the
// class reads no clock). The rate is done / elapsed; ETA = (total - done) / rate.
//
// Thread-safety: not thread-safe; callers serialise Update/Finish.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace kinference {

// The line's text without carriage return or newline. total 0: no percentage or ETA.
std::string FormatProgress(const std::string& label, const std::string& unit, size_t done,
                           size_t total, double elapsed_s);

// stderr when it is a terminal, else nullptr (quiet).
FILE* TerminalStderr();

class ProgressLine {
 public:
  // `out` null: quiet.
  ProgressLine(FILE* out, std::string label, std::string unit, size_t total,
               double min_interval_s = 0.5);
  // Redraws when `min_interval_s` passed since the last draw, or when done == total.
  void Update(size_t done, double elapsed_s);
  // Draws the final state and ends the line (only if anything was drawn).
  void Finish(size_t done, double elapsed_s);
  void set_total(size_t total) { total_ = total; }

 private:
  void Draw(size_t done, double elapsed_s);

  FILE* out_;
  std::string label_, unit_;
  size_t total_;
  double min_interval_s_;
  double last_draw_s_ = -1;
  size_t last_width_ = 0;
  bool drawn_ = false;
};

}  // namespace kinference
