#include "common/cli_exit.h"

namespace kinference {
int& ExitCodeRef() {
  static int code = 0;
  return code;
}
}  // namespace kinference
