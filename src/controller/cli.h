// Registers `kinference controller`: validates kinference.io objects, writes their status
// and keeps InferencePolicy revisions, with Lease-based leader election (controller.h).
//
//   kinference controller [--kubeconfig FILE] [--context NAME] [--namespace NS]
//       [--identity ID] [--lease-name NAME] [--lease-duration-s 15] [--renew-deadline-s 10]
//       [--retry-period-s 2] [--revision-history-limit 10] [--listen ADDR:PORT]
//
// Configuration: --kubeconfig, else $KUBECONFIG, else in-cluster (k8s/kubeconfig.h).
// Namespace: --namespace, else the kubeconfig context's / service account's. Identity:
// --identity, else $POD_NAME (Downward API), else the host name, plus a random suffix.
// Prints "controller listening on ADDR:PORT" (health and metrics) once started; exits 2
// on a configuration error, 0 after SIGTERM/SIGINT (releasing the lease first).
// Thread-safety: call from main() only.
#pragma once

#include <CLI/CLI.hpp>

#include "common/cli_exit.h"

namespace kinference::controller {
// Also adds `policy history` and `policy rollback` (policy_history.h): call it after the
// `policy` subcommand is registered.
void RegisterCommand(CLI::App& app);
}  // namespace kinference::controller
