#include "common/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>

namespace kinference {
namespace {

std::string Duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  auto t = static_cast<long long>(std::llround(s));
  if (t < 60) return fmt::format("{} s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60);
}

}  // namespace

std::string FormatProgress(const std::string& label, const std::string& unit, size_t done,
                           size_t total, double elapsed_s) {
  double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0;
  std::string out = fmt::format("{}: {}", label, done);
  if (total > 0) {
    out += fmt::format("/{} {} ({}%)", total, unit, done * 100 / total);
  } else {
    out += " " + unit;
  }
  out += fmt::format(", {:.1f} {}/s", rate, unit);
  if (total > 0 && done < total) {
    out += ", ETA " + (rate > 0 ? Duration(static_cast<double>(total - done) / rate) : "?");
  } else if (total > 0) {
    out += ", took " + Duration(elapsed_s);
  }
  return out;
}

FILE* TerminalStderr() { return isatty(fileno(stderr)) ? stderr : nullptr; }

ProgressLine::ProgressLine(FILE* out, std::string label, std::string unit, size_t total,
                           double min_interval_s)
    : out_(out),
      label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      min_interval_s_(min_interval_s) {}

void ProgressLine::Update(size_t done, double elapsed_s) {
  if (!out_) return;
  if (drawn_ && done != total_ && elapsed_s - last_draw_s_ < min_interval_s_) return;
  Draw(done, elapsed_s);
}

void ProgressLine::Finish(size_t done, double elapsed_s) {
  if (!out_ || !drawn_) return;
  Draw(done, elapsed_s);
  std::fputc('\n', out_);
  std::fflush(out_);
  drawn_ = false;
}

void ProgressLine::Draw(size_t done, double elapsed_s) {
  std::string text = FormatProgress(label_, unit_, done, total_, elapsed_s);
  size_t width = text.size();
  // Blank out what a longer previous line left behind.
  if (width < last_width_) text.append(last_width_ - width, ' ');
  std::fputc('\r', out_);
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
  last_width_ = width;
  last_draw_s_ = elapsed_s;
  drawn_ = true;
}

}  // namespace kinference
