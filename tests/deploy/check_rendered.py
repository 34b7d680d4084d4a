#!/usr/bin/env python3
"""Checks `helm template` output of deploy/helm/kinference (used by helm_chart_test.sh).

  check_rendered.py defaults FILE              chart defaults, release "kinference" in kinference-system
  check_rendered.py custom FILE                serviceMonitor on, watchNamespace team-a, controller
                                               disabled, grafanaDashboard on (folder annotation)
  check_rendered.py kinference-resources FILE  prints the kinference.io resources the Roles name
  check_rendered.py controller-args FILE       prints the controller container's args, one a line
  check_rendered.py gateway-args FILE          the same for the gateway
  check_rendered.py gateway-config FILE        prints the gateway ConfigMap's gateway.yaml, listening
                                               on 127.0.0.1, any free port

Exits 1 with one line per problem.
"""
import json
import os
import sys

import yaml

NS = "kinference-system"
DASHBOARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../deploy/grafana/kinference.json")


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def by_kind(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def named(docs, kind, name, namespace=NS):
    for d in by_kind(docs, kind):
        if d["metadata"]["name"] == name and d["metadata"].get("namespace") == namespace:
            return d
    return None


class Checker:
    def __init__(self):
        self.problems = []

    def expect(self, cond, what):
        if not cond:
            self.problems.append(what)
        return cond


def check_pod_spec(c, name, spec):
    psc = spec.get("securityContext", {})
    c.expect(psc.get("runAsNonRoot") is True, f"{name}: pod runAsNonRoot")
    c.expect(psc.get("runAsUser", 0) != 0, f"{name}: pod runAsUser non-zero")
    c.expect(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{name}: seccomp RuntimeDefault")
    c.expect(spec.get("automountServiceAccountToken") is True, f"{name}: service-account token mounted")
    for ct in spec["containers"]:
        sc = ct.get("securityContext", {})
        c.expect(sc.get("readOnlyRootFilesystem") is True, f"{name}/{ct['name']}: readOnlyRootFilesystem")
        c.expect(sc.get("allowPrivilegeEscalation") is False, f"{name}/{ct['name']}: no privilege escalation")
        c.expect(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{name}/{ct['name']}: drop ALL")
        c.expect("/tmp" in [m["mountPath"] for m in ct.get("volumeMounts", [])], f"{name}: writable /tmp")
        for probe in ("livenessProbe", "readinessProbe"):
            c.expect(ct.get(probe, {}).get("httpGet", {}).get("path", "").startswith("/"), f"{name}: {probe}")
        res = ct.get("resources", {})
        c.expect("cpu" in res.get("requests", {}) and "memory" in res.get("requests", {}), f"{name}: requests")
        c.expect("memory" in res.get("limits", {}), f"{name}: memory limit")
        c.expect(ct["image"] == "kinference/kinference:0.1.0", f"{name}: image {ct['image']}")


def role_rules(docs, name, namespace):
    role = named(docs, "Role", name, namespace)
    return role["rules"] if role else None


def kinference_resources(docs):
    out = set()
    for role in by_kind(docs, "Role"):
        for rule in role["rules"]:
            if "kinference.io" in rule["apiGroups"]:
                out.update(r for r in rule["resources"] if "/" not in r)
    return sorted(out)


def check_bindings(c, docs, role, sa, namespaces):
    for ns in namespaces:
        rb = named(docs, "RoleBinding", role, ns)
        if c.expect(rb is not None, f"RoleBinding {ns}/{role}"):
            c.expect(rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
                     f"RoleBinding {ns}/{role} roleRef")
            c.expect(rb["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": NS}],
                     f"RoleBinding {ns}/{role} subjects {rb['subjects']}")


def defaults(docs):
    c = Checker()
    kinds = sorted({d["kind"] for d in docs})
    c.expect(kinds == ["ConfigMap", "Deployment", "PodDisruptionBudget", "Role", "RoleBinding", "Service",
                       "ServiceAccount"], f"kinds {kinds}")
    c.expect(not by_kind(docs, "ClusterRole") and not by_kind(docs, "ClusterRoleBinding"), "nothing cluster-wide")
    for d in docs:
        c.expect(d["metadata"].get("namespace") == NS, f"{d['kind']} {d['metadata']['name']} in {NS}")
        c.expect(d["metadata"]["labels"].get("app.kubernetes.io/managed-by") == "Helm", "standard labels")

    gw = named(docs, "Deployment", "kinference-gateway")
    ctrl = named(docs, "Deployment", "kinference-controller")
    if c.expect(gw is not None, "gateway Deployment"):
        spec = gw["spec"]["template"]["spec"]
        check_pod_spec(c, "gateway", spec)
        ct = spec["containers"][0]
        c.expect(ct["args"][:2] == ["gateway", "--kubernetes"], f"gateway args {ct['args']}")
        c.expect("--config=/etc/kinference/gateway.yaml" in ct["args"], "gateway --config")
        c.expect(f"--namespace={NS}" in ct["args"], "gateway watches the release namespace")
        c.expect(ct["ports"][0]["containerPort"] == 8000, "gateway port 8000")
        c.expect(ct["livenessProbe"]["httpGet"]["path"] == "/health", "gateway liveness /health")
        c.expect(spec["serviceAccountName"] == "kinference-gateway", "gateway ServiceAccount")
        c.expect(gw["spec"]["replicas"] == 2, "2 gateway replicas")
        c.expect(spec["terminationGracePeriodSeconds"] == 35, "grace period = drain 30 s + 5")
        sel = gw["spec"]["selector"]["matchLabels"]
        c.expect(sel.get("app.kubernetes.io/component") == "gateway", "gateway selector")
        c.expect(all(gw["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in sel.items()),
                 "gateway pod labels match its selector")
    if c.expect(ctrl is not None, "controller Deployment"):
        spec = ctrl["spec"]["template"]["spec"]
        check_pod_spec(c, "controller", spec)
        args = spec["containers"][0]["args"]
        c.expect(args[0] == "controller", f"controller args {args}")
        c.expect(f"--namespace={NS}" in args and "--lease-name=kinference-controller" in args, f"args {args}")
        c.expect("--listen=0.0.0.0:8081" in args, "controller --listen")
        ct = spec["containers"][0]
        c.expect(ct["livenessProbe"]["httpGet"]["path"] == "/healthz", "controller liveness /healthz")
        c.expect(ct["readinessProbe"]["httpGet"]["path"] == "/readyz", "controller readiness /readyz")
        c.expect(spec["serviceAccountName"] == "kinference-controller", "controller ServiceAccount")
        c.expect(ctrl["spec"]["replicas"] == 2, "2 controller replicas (leader + standby)")

    c.expect(named(docs, "ConfigMap", "kinference-grafana-dashboard") is None, "no dashboard ConfigMap by default")
    cm = named(docs, "ConfigMap", "kinference-gateway")
    if c.expect(cm is not None, "gateway ConfigMap"):
        conf = yaml.safe_load(cm["data"]["gateway.yaml"])
        c.expect(conf.get("listen") == {"address": "0.0.0.0", "port": 8000}, f"listen {conf.get('listen')}")
        c.expect(conf.get("drain_timeout_s") == 30, "drain_timeout_s")
        c.expect(conf.get("strategy") == "predicted-ttft", "strategy")
        c.expect("pools" not in conf, "no static pools")

    svc = named(docs, "Service", "kinference-gateway")
    if c.expect(svc is not None, "gateway Service"):
        c.expect(svc["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
                 f"service ports {svc['spec']['ports']}")
        c.expect(svc["spec"]["selector"].get("app.kubernetes.io/component") == "gateway", "service selector")
    pdb = named(docs, "PodDisruptionBudget", "kinference-gateway")
    if c.expect(pdb is not None, "gateway PDB"):
        c.expect(pdb["spec"]["maxUnavailable"] == 1, "PDB maxUnavailable 1")
        c.expect(pdb["spec"]["selector"]["matchLabels"].get("app.kubernetes.io/component") == "gateway",
                 "PDB selects the gateways")

    sas = sorted(d["metadata"]["name"] for d in by_kind(docs, "ServiceAccount"))
    c.expect(sas == ["kinference-controller", "kinference-gateway"], f"ServiceAccounts {sas}")
    c.expect(sorted(d["metadata"]["name"] for d in by_kind(docs, "Role")) ==
             ["kinference-controller", "kinference-gateway"], "Roles")
    check_bindings(c, docs, "kinference-controller", "kinference-controller", [NS])
    check_bindings(c, docs, "kinference-gateway", "kinference-gateway", [NS])
    # No wildcard anywhere; writes only where the processes write.
    for role in by_kind(docs, "Role"):
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs"):
                c.expect("*" not in rule[field], f"Role {role['metadata']['name']}: no '*' in {field}")
            writes = set(rule["verbs"]) & {"create", "update", "patch", "delete", "deletecollection"}
            if writes:
                allowed = all(r.endswith("/status") or r in ("controllerrevisions", "leases")
                              for r in rule["resources"])
                c.expect(allowed and role["metadata"]["name"].startswith("kinference-controller"),
                         f"Role {role['metadata']['name']} writes {rule['resources']}")
    gw_rules = role_rules(docs, "kinference-gateway", NS) or []
    c.expect(all(set(r["verbs"]) <= {"get", "list", "watch"} for r in gw_rules), "gateway is read-only")
    ctrl_rules = role_rules(docs, "kinference-controller", NS) or []
    c.expect({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
              "resourceNames": ["kinference-controller"], "verbs": ["get", "update"]} in ctrl_rules,
             "lease get/update limited to its name")
    return c.problems


def custom(docs):
    c = Checker()
    c.expect(named(docs, "Deployment", "kinference-controller") is None, "controller disabled")
    c.expect(named(docs, "ServiceAccount", "kinference-controller") is None, "no controller ServiceAccount")
    c.expect(not [r for r in by_kind(docs, "Role") if "controller" in r["metadata"]["name"]], "no controller Roles")
    c.expect(named(docs, "Role", "kinference-gateway", "team-a") is not None, "gateway Role in team-a")
    c.expect(len(by_kind(docs, "Role")) == 1, "no Role outside the watched namespace")
    check_bindings(c, docs, "kinference-gateway", "kinference-gateway", ["team-a"])
    gw = named(docs, "Deployment", "kinference-gateway")
    if c.expect(gw is not None, "gateway Deployment"):
        args = gw["spec"]["template"]["spec"]["containers"][0]["args"]
        c.expect("--namespace=team-a" in args, f"args {args}")
    sm = named(docs, "ServiceMonitor", "kinference-gateway")
    if c.expect(sm is not None, "ServiceMonitor"):
        c.expect(sm["apiVersion"] == "monitoring.coreos.com/v1", "ServiceMonitor apiVersion")
        ep = sm["spec"]["endpoints"][0]
        c.expect(ep["port"] == "http" and ep["path"] == "/metrics", f"ServiceMonitor endpoint {ep}")
        c.expect(sm["spec"]["selector"]["matchLabels"].get("app.kubernetes.io/component") == "gateway",
                 "ServiceMonitor selects the gateway Service")
    # Grafana's sidecar imports ConfigMaps by label: the dashboard, as committed.
    cm = named(docs, "ConfigMap", "kinference-grafana-dashboard")
    if c.expect(cm is not None, "Grafana dashboard ConfigMap"):
        c.expect(cm["metadata"]["labels"].get("grafana_dashboard") == "1", "grafana_dashboard label")
        c.expect(cm["metadata"].get("annotations") == {"grafana_folder": "Kinference"}, "folder annotation")
        with open(DASHBOARD) as f:
            want = json.load(f)
        got = json.loads(cm["data"].get("kinference.json", "null"))
        c.expect(got == want, "the ConfigMap's kinference.json is deploy/grafana/kinference.json")
    return c.problems


def main():
    mode, path = sys.argv[1], sys.argv[2]
    docs = load(path)
    if mode == "kinference-resources":
        print(" ".join(kinference_resources(docs)) + " ")
        return 0
    if mode in ("controller-args", "gateway-args"):
        deploy = named(docs, "Deployment", "kinference-" + mode.split("-")[0])
        print("\n".join(deploy["spec"]["template"]["spec"]["containers"][0]["args"]))
        return 0
    if mode == "gateway-config":
        config = yaml.safe_load(named(docs, "ConfigMap", "kinference-gateway")["data"]["gateway.yaml"])
        config["listen"] = {"address": "127.0.0.1", "port": 0}
        print(yaml.safe_dump(config, sort_keys=False))
        return 0
    problems = {"defaults": defaults, "custom": custom}[mode](docs)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
