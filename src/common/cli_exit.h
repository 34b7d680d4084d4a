// Exit status of the subcommand that ran: subcommand callbacks set it, main returns it.
// Thread-safety: set once by the main thread.
#pragma once

namespace kinference {
int& ExitCodeRef();
inline int ExitCode() { return ExitCodeRef(); }
inline void SetExitCode(int code) { ExitCodeRef() = code; }
}  // namespace kinference
