// Process logging for the shells (gateway, engine-sim): spdlog's default logger on stderr,
// as text or as JSON lines, with a level set at start and changeable at run time, plus
// structured events (one line with named fields, e.g. the gateway's access log).
//
// Shapes. Text: "[2026-12-01 17:43:26.957] [gateway] [info] message"; an event appends its
// fields as key=value (values with spaces, quotes or '=' double-quoted, JSON-escaped).
// JSON: one object a line, {"time":"2026-12-01T17:43:26.957Z","level":"info",
// "logger":"gateway","msg":"message"} and an event's fields as further members (numbers
// as numbers; a field named like a fixed member is prefixed with "field_"). Times are UTC
// with milliseconds (RFC 3339).
//
// What is never logged: callers pass no secrets; fields are values the caller chose, never
// whole headers (API keys, Authorization and provider keys stay out of every line).
//
// Thread-safety: ConfigureLogging once at start, before other threads log; the rest may
// be called from any thread (spdlog's *_mt sinks serialise writes; a line is written with
// one call, so lines never interleave).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/status.h"

namespace kinference {

enum class LogFormat { kText, kJson };
// spdlog's levels, in its order (trace is the most verbose).
enum class LogLevel { kTrace = 0, kDebug, kInfo, kWarn, kError, kCritical, kOff };

// "text" | "json". kInvalidArgument otherwise.
Result<LogFormat> ParseLogFormat(std::string_view s);
// "trace" | "debug" | "info" | "warn" | "error" | "critical" | "off". kInvalidArgument
// otherwise.
Result<LogLevel> ParseLogLevel(std::string_view s);
std::string_view LogLevelName(LogLevel level);

struct LogOptions {
  LogFormat format = LogFormat::kText;
  LogLevel level = LogLevel::kInfo;
};

// Makes a stderr logger named `name` spdlog's default, in `options`' format and level.
void ConfigureLogging(const std::string& name, const LogOptions& options);
LogFormat CurrentLogFormat();
LogLevel CurrentLogLevel();
void SetLogLevel(LogLevel level);
// Moves the level `steps` towards trace (> 0: more verbose) or off (< 0), clamped to
// [trace, critical]; returns the new level. SIGUSR1 / SIGUSR2 in the shells.
LogLevel StepLogLevel(int steps);

// One field of an event: a string, an integer or a number (NaN and infinities: null).
using LogValue = std::variant<std::string, int64_t, double>;
using LogFields = std::vector<std::pair<std::string, LogValue>>;

// The line an event is written as, without the trailing newline (for tests and callers
// with their own sinks). `time_ms`: milliseconds since the Unix epoch.
std::string FormatLogEvent(LogFormat format, int64_t time_ms, LogLevel level,
                           std::string_view logger, std::string_view msg, const LogFields& fields);
// Writes an event through the default logger's sink (dropped below the current level).
void LogEvent(LogLevel level, std::string_view logger, std::string_view msg,
              const LogFields& fields);

}  // namespace kinference
