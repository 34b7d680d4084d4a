#include "common/logging.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <ctime>

namespace kinference {
namespace {

constexpr std::string_view kLevelNames[] = {"trace", "debug",    "info", "warn",
                                            "error", "critical", "off"};

std::atomic<LogFormat> g_format{LogFormat::kText};
// Events are written whole by their own logger ("%v"), on a stderr sink that shares
// spdlog's console mutex with the default logger's, so lines never interleave.
std::shared_ptr<spdlog::logger> g_event_logger;

spdlog::level::level_enum ToSpd(LogLevel l) {
  return static_cast<spdlog::level::level_enum>(static_cast<int>(l));
}
LogLevel FromSpd(spdlog::level::level_enum l) {
  return static_cast<LogLevel>(std::clamp(static_cast<int>(l), 0, 6));
}

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

std::string Number(double v) {
  if (!std::isfinite(v)) return "null";
  return fmt::format("{}", v);
}

// Text values: bare unless empty or holding a space, quote, '=' or a control character.
void AppendTextValue(std::string& out, const std::string& s) {
  bool bare = !s.empty() && std::none_of(s.begin(), s.end(), [](unsigned char c) {
    return c <= ' ' || c == '"' || c == '=' || c == 0x7f;
  });
  if (bare) {
    out += s;
  } else {
    AppendJsonString(out, s);
  }
}

bool IsFixedMember(std::string_view k) {
  return k == "time" || k == "level" || k == "logger" || k == "msg";
}

std::string TimeText(int64_t time_ms, bool utc_rfc3339) {
  std::time_t secs = static_cast<std::time_t>(time_ms / 1000);
  std::tm tm{};
  if (utc_rfc3339) {
    gmtime_r(&secs, &tm);
  } else {
    localtime_r(&secs, &tm);
  }
  char buf[32];
  std::strftime(buf, sizeof buf, utc_rfc3339 ? "%Y-%m-%dT%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &tm);
  return fmt::format("{}.{:03}{}", buf, time_ms % 1000, utc_rfc3339 ? "Z" : "");
}

// JSON lines for the default logger's ordinary messages.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    int64_t ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    std::string line =
        FormatLogEvent(LogFormat::kJson, ms, FromSpd(msg.level),
                       std::string_view(msg.logger_name.data(), msg.logger_name.size()),
                       std::string_view(msg.payload.data(), msg.payload.size()), {});
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

Result<LogFormat> ParseLogFormat(std::string_view s) {
  if (s == "text") return LogFormat::kText;
  if (s == "json") return LogFormat::kJson;
  return Status(ErrorCode::kInvalidArgument,
                "log format must be text or json, not '" + std::string(s) + "'");
}

Result<LogLevel> ParseLogLevel(std::string_view s) {
  for (size_t i = 0; i < std::size(kLevelNames); ++i)
    if (s == kLevelNames[i]) return static_cast<LogLevel>(i);
  return Status(ErrorCode::kInvalidArgument,
                "log level must be trace, debug, info, warn, error, critical or off, not '" +
                    std::string(s) + "'");
}

std::string_view LogLevelName(LogLevel level) {
  return kLevelNames[std::clamp(static_cast<int>(level), 0, 6)];
}

void ConfigureLogging(const std::string& name, const LogOptions& options) {
  g_format = options.format;
  std::shared_ptr<spdlog::logger> logger;
  if (options.format == LogFormat::kJson) {
    logger =
        std::make_shared<spdlog::logger>(name, std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger = std::make_shared<spdlog::logger>(
        name, std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  }
  logger->set_level(ToSpd(options.level));
  spdlog::set_default_logger(logger);
  g_event_logger = std::make_shared<spdlog::logger>(
      name + ".events", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  g_event_logger->set_pattern("%v");
  g_event_logger->set_level(spdlog::level::trace);
}

LogFormat CurrentLogFormat() { return g_format; }

LogLevel CurrentLogLevel() { return FromSpd(spdlog::default_logger_raw()->level()); }

void SetLogLevel(LogLevel level) { spdlog::default_logger_raw()->set_level(ToSpd(level)); }

LogLevel StepLogLevel(int steps) {
  int l = static_cast<int>(CurrentLogLevel()) - steps;
  LogLevel next = static_cast<LogLevel>(
      std::clamp(l, static_cast<int>(LogLevel::kTrace), static_cast<int>(LogLevel::kCritical)));
  SetLogLevel(next);
  return next;
}

std::string FormatLogEvent(LogFormat format, int64_t time_ms, LogLevel level,
                           std::string_view logger, std::string_view msg, const LogFields& fields) {
  std::string out;
  if (format == LogFormat::kJson) {
    out += "{\"time\":\"" + TimeText(time_ms, true) + "\",\"level\":";
    AppendJsonString(out, LogLevelName(level));
    out += ",\"logger\":";
    AppendJsonString(out, logger);
    out += ",\"msg\":";
    AppendJsonString(out, msg);
    for (const auto& [key, value] : fields) {
      out += ',';
      AppendJsonString(out, IsFixedMember(key) ? "field_" + key : key);
      out += ':';
      if (const auto* s = std::get_if<std::string>(&value)) {
        AppendJsonString(out, *s);
      } else if (const auto* i = std::get_if<int64_t>(&value)) {
        out += std::to_string(*i);
      } else {
        out += Number(std::get<double>(value));
      }
    }
    out += '}';
    return out;
  }
  out += "[" + TimeText(time_ms, false) + "] [" + std::string(logger) + "] [" +
         std::string(LogLevelName(level)) + "] " + std::string(msg);
  for (const auto& [key, value] : fields) {
    out += ' ' + key + '=';
    if (const auto* s = std::get_if<std::string>(&value)) {
      AppendTextValue(out, *s);
    } else if (const auto* i = std::get_if<int64_t>(&value)) {
      out += std::to_string(*i);
    } else {
      out += Number(std::get<double>(value));
    }
  }
  return out;
}

void LogEvent(LogLevel level, std::string_view logger, std::string_view msg,
              const LogFields& fields) {
  if (level < CurrentLogLevel() || level == LogLevel::kOff) return;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  std::string line = FormatLogEvent(g_format, ms, level, logger, msg, fields);
  if (g_event_logger) {
    g_event_logger->log(ToSpd(level), line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace kinference
