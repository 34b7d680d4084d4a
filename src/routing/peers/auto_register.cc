// Registers the peer strategies at start-up (static initialisation) in every executable
// that links kinference_routing. Nothing references this file's symbols, so a static
// library's member would be dropped by the linker; src/routing/CMakeLists.txt keeps it
// with the linker option --undefined=kinference_routing_peers_anchor.
#include "routing/peers/peers.h"

extern "C" {
// Referenced only by that linker option; its value is unused.
extern const int kinference_routing_peers_anchor;
const int kinference_routing_peers_anchor = 1;
}

namespace kinference::routing::peers {
namespace {
[[maybe_unused]] const bool kRegistered = (RegisterPeerStrategies(), true);
}  // namespace
}  // namespace kinference::routing::peers
