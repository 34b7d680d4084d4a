// Registration of the peer strategies (peers.h); the automatic registration is in
// auto_register.cc.
#include "routing/peers/peers.h"

namespace kinference::routing::peers {

std::vector<std::string> PeerStrategyNames() {
  return {"gie", "sglang", "dynamo", "mooncake", "llmd-sticky"};
}

void RegisterPeerStrategies() {
  RegisterStrategy("gie", [](const StrategyOptions& o) { return MakeGie(o); });
  RegisterStrategy("sglang", [](const StrategyOptions& o) { return MakeSglang(o); });
  RegisterStrategy("dynamo", [](const StrategyOptions& o) { return MakeDynamo(o); });
  RegisterStrategy("mooncake", [](const StrategyOptions& o) { return MakeMooncake(o); });
  RegisterStrategy("llmd-sticky", [](const StrategyOptions& o) { return MakeLlmdSticky(o); });
}

}  // namespace kinference::routing::peers
