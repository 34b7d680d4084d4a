// `kinference policy history` and `kinference policy rollback`: an InferencePolicy's
// revisions in a cluster (ControllerRevisions kept by `kinference controller`,
// crd/revisions.h), like `kubectl rollout history` / `kubectl rollout undo`.
//
//   kinference policy history NAME [--revision N] [cluster flags]
//     Lists REVISION, CURRENT (*: the spec in effect), CREATED, CHANGE-CAUSE (the
//     kubernetes.io/change-cause annotation the policy had); with --revision N prints that
//     revision's spec as YAML.
//   kinference policy rollback NAME [--to-revision N] [cluster flags]
//     Replaces the policy's spec with revision N's (default: the revision before the
//     current one). The update carries the policy's resourceVersion: a concurrent edit
//     fails it (exit 1) instead of being overwritten. The controller then renumbers the
//     restored revision as the newest, as `kubectl rollout undo` does.
//   cluster flags: --kubeconfig FILE, --context NAME, --namespace NS (k8s/kubeconfig.h).
//
// Exit status: 0 done, 1 a cluster error or unknown revision (message on stderr), 2 bad
// configuration.
//
// Thread-safety: call from main() only.
#pragma once

#include <CLI/CLI.hpp>

namespace kinference::controller {
// Adds `history` and `rollback` under `policy` (created here when no other command made it).
void RegisterPolicyHistoryCommands(CLI::App& app);
}  // namespace kinference::controller
