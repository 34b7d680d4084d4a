#!/usr/bin/env python3
"""Checks `helm template` output of deploy/helm/kinference (used by helm_chart_test.sh).

  check_rendered.py defaults FILE              chart defaults, release "kinference" in kinference-system
  check_rendered.py custom FILE                serviceMonitor on, watchNamespace team-a, controller
                                               disabled, grafanaDashboard on (folder annotation)
  check_rendered.py full FILE                  tests/deploy/values-full.yaml: pool settings, Secret
                                               references, volumes, SQLite ledger on a PVC, admin
                                               port NetworkPolicy, PrometheusRule, controller
                                               metrics Service/ServiceMonitor/PDB, digest
  check_rendered.py without-monitoring FILE    prints the objects but ServiceMonitors and PrometheusRules
  check_rendered.py names FILE RELEASE         objects named <fullname>-...; the PrometheusRule's
                                               job label is the gateway Service's name
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
RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../deploy/prometheus/kinference-rules.yaml")
CHART_RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "../../deploy/helm/kinference/prometheus/kinference-rules.yaml")


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


def check_pod_spec(c, name, spec, image="kinference/kinference:0.1.0"):
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
        c.expect(ct["image"] == image, f"{name}: image {ct['image']}")


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
        c.expect(ct["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"},
                                 {"name": "admin", "containerPort": 9090, "protocol": "TCP"}],
                 f"gateway ports {ct['ports']}")
        c.expect(ct["livenessProbe"]["httpGet"] == {"path": "/health", "port": "admin"}, "gateway liveness /health")
        c.expect(ct["readinessProbe"]["httpGet"] == {"path": "/ready", "port": "admin"},
                 f"gateway readiness {ct['readinessProbe']}")
        c.expect(ct.get("lifecycle", {}).get("preStop") == {"exec": {"command": ["/bin/sleep", "5"]}},
                 f"gateway preStop {ct.get('lifecycle')}")
        c.expect(spec["serviceAccountName"] == "kinference-gateway", "gateway ServiceAccount")
        c.expect(gw["spec"]["replicas"] == 2, "2 gateway replicas")
        c.expect(spec["terminationGracePeriodSeconds"] == 40, "grace period = preStop 5 s + drain 30 s + 5")
        c.expect("strategy" not in gw["spec"], "rolling updates (no PVC)")
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
        c.expect(conf.get("admin_listen") == {"address": "0.0.0.0", "port": 9090},
                 f"admin_listen {conf.get('admin_listen')}")
        c.expect(conf.get("drain_timeout_s") == 30, "drain_timeout_s")
        c.expect(conf.get("strategy") == "predicted-ttft", "strategy")
        c.expect("pools" not in conf, "no static pools")

    svc = named(docs, "Service", "kinference-gateway")
    if c.expect(svc is not None, "gateway Service"):
        c.expect(svc["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"},
                                          {"name": "admin", "port": 9090, "targetPort": "admin", "protocol": "TCP"}],
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
        c.expect(ep["port"] == "admin" and ep["path"] == "/metrics", f"ServiceMonitor endpoint {ep}")
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


def env_names(container):
    return [e["name"] for e in container.get("env", [])]


def full(docs):
    """tests/deploy/values-full.yaml, release "kinference"."""
    c = Checker()
    gw = named(docs, "Deployment", "kinference-gateway")
    if not c.expect(gw is not None, "gateway Deployment"):
        return c.problems
    spec = gw["spec"]["template"]["spec"]
    ct = spec["containers"][0]
    check_pod_spec(c, "gateway", spec, image="registry.example.com/kinference@sha256:" + "0123456789abcdef" * 4)
    c.expect(spec.get("priorityClassName") == "system-cluster-critical", "gateway priorityClassName")
    c.expect(gw["spec"]["replicas"] == 1 and gw["spec"].get("strategy") == {"type": "Recreate"},
             f"one replica, Recreate (ReadWriteOnce ledger): {gw['spec'].get('strategy')}")
    env = {e["name"]: e for e in ct["env"]}
    c.expect(env.get("VLLM_API_KEY", {}).get("valueFrom") == {"secretKeyRef": {"name": "vllm-api-key", "key": "key"}},
             "VLLM_API_KEY from its Secret")
    c.expect("REDIS_PASSWORD" in env and "POD_NAME" in env, f"env {env_names(ct)}")
    c.expect(ct.get("envFrom") == [{"secretRef": {"name": "kinference-gateway-env", "optional": True}}], "envFrom")
    mounts = {m["name"]: m for m in ct["volumeMounts"]}
    vols = {v["name"]: v for v in spec["volumes"]}
    c.expect(mounts.get("ledger", {}).get("mountPath") == "/var/lib/kinference", "ledger mounted")
    c.expect(vols.get("ledger", {}).get("persistentVolumeClaim") == {"claimName": "kinference-gateway-ledger"},
             "ledger volume is the chart's PVC")
    c.expect(mounts.get("tls", {}).get("mountPath") == "/etc/kinference-tls" and
             vols.get("tls", {}).get("secret") == {"secretName": "gateway-tls"}, "TLS Secret mounted")
    c.expect("models" in mounts and "models" in vols, "tokenizer folder mounted")
    pvc = named(docs, "PersistentVolumeClaim", "kinference-gateway-ledger")
    if c.expect(pvc is not None, "ledger PVC"):
        c.expect(pvc["spec"]["resources"]["requests"]["storage"] == "2Gi", "PVC size")
        c.expect(pvc["spec"]["accessModes"] == ["ReadWriteOnce"], "PVC ReadWriteOnce")
        c.expect(pvc["metadata"]["annotations"].get("helm.sh/resource-policy") == "keep", "PVC kept on uninstall")
    conf = yaml.safe_load(named(docs, "ConfigMap", "kinference-gateway")["data"]["gateway.yaml"])
    c.expect(conf["listen"] == {"address": "0.0.0.0", "port": 8000,
                                "tls": {"cert_file": "/etc/kinference-tls/tls.crt",
                                        "key_file": "/etc/kinference-tls/tls.key"}}, f"listen {conf['listen']}")
    c.expect(conf["pools"] == [{"name": "vllm-qwen3-8b", "max_in_flight": "derive", "api_key_env": "VLLM_API_KEY",
                                "kv_events": {"tokenizer": "/models/qwen3-8b"}}], f"pools {conf['pools']}")
    c.expect(conf["accounting"]["ledger"] == {"sqlite_path": "/var/lib/kinference/kinference-ledger.db"},
             f"ledger {conf['accounting'].get('ledger')}")
    ctrl = named(docs, "Deployment", "kinference-controller")
    if c.expect(ctrl is not None, "controller Deployment"):
        cspec = ctrl["spec"]["template"]["spec"]
        c.expect(cspec.get("priorityClassName") == "system-cluster-critical", "controller priorityClassName")
        c.expect(len(cspec.get("topologySpreadConstraints", [])) == 1, "controller topology spread")
        c.expect("HTTPS_PROXY" in env_names(cspec["containers"][0]), "controller extraEnv")
    msvc = named(docs, "Service", "kinference-controller-metrics")
    if c.expect(msvc is not None, "controller metrics Service"):
        c.expect(msvc["spec"]["ports"][0]["port"] == 8081 and msvc["spec"]["ports"][0]["targetPort"] == "http",
                 "controller metrics port")
        c.expect(msvc["spec"]["selector"].get("app.kubernetes.io/component") == "controller", "selects the controller")
    sm = named(docs, "ServiceMonitor", "kinference-controller")
    c.expect(sm is not None and sm["spec"]["endpoints"][0]["port"] == "http", "controller ServiceMonitor")
    c.expect(named(docs, "PodDisruptionBudget", "kinference-controller") is not None, "controller PDB")
    np = named(docs, "NetworkPolicy", "kinference-gateway")
    if c.expect(np is not None, "NetworkPolicy"):
        ing = np["spec"]["ingress"]
        c.expect(ing[0] == {"ports": [{"port": "http", "protocol": "TCP"}]}, f"API port from anywhere: {ing[0]}")
        c.expect(len(ing) == 2 and ing[1]["ports"] == [{"port": "admin", "protocol": "TCP"}] and
                 ing[1]["from"] == [{"namespaceSelector": {"matchLabels": {
                     "kubernetes.io/metadata.name": "monitoring"}}}], f"admin port from monitoring only: {ing[1:]}")
    problems = c.problems + names(docs, "kinference")
    return problems


def rule_jobs(rule_doc):
    """The job="..." values the rules' expressions select."""
    import re
    out = set()
    for group in rule_doc["groups"]:
        for rule in group["rules"]:
            out.update(re.findall(r'job="([^"]*)"', rule["expr"]))
    return out


def names(docs, release):
    """Objects named after the release's fullname; the PrometheusRule's job is the name of
    the gateway Service (the job Prometheus gives a ServiceMonitor's targets)."""
    c = Checker()
    fullname = release if "kinference" in release else release + "-kinference"
    svc = named(docs, "Service", fullname + "-gateway")
    c.expect(svc is not None, f"Service {fullname}-gateway (services: "
             f"{[d['metadata']['name'] for d in by_kind(docs, 'Service')]})")
    rule = named(docs, "PrometheusRule", fullname + "-gateway")
    if c.expect(rule is not None, "PrometheusRule") and svc is not None:
        jobs = rule_jobs(rule["spec"])
        c.expect(jobs == {svc["metadata"]["name"]}, f"PrometheusRule jobs {jobs}, gateway Service "
                 f"{svc['metadata']['name']}")
        with open(RULES) as f:
            want = yaml.safe_load(f)
        with open(CHART_RULES) as f:
            c.expect(yaml.safe_load(f) == want, "the chart's prometheus/kinference-rules.yaml is "
                     "deploy/prometheus/kinference-rules.yaml")
        c.expect(len(rule["spec"]["groups"]) == len(want["groups"]) and
                 sum(len(g["rules"]) for g in rule["spec"]["groups"]) == sum(len(g["rules"]) for g in want["groups"]),
                 "PrometheusRule carries every rule")
    sm = named(docs, "ServiceMonitor", fullname + "-gateway")
    if c.expect(sm is not None, "ServiceMonitor") and svc is not None:
        c.expect(all(svc["metadata"]["labels"].get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items()),
                 "the ServiceMonitor selects the gateway Service")
        c.expect(sm["spec"]["endpoints"][0]["port"] in [p["name"] for p in svc["spec"]["ports"]],
                 "the ServiceMonitor's port is one of the Service's")
    return c.problems


def main():
    mode, path = sys.argv[1], sys.argv[2]
    docs = load(path)
    if mode == "without-monitoring":  # for a server without the Prometheus Operator's CRDs
        print(yaml.safe_dump_all([d for d in docs if not d["apiVersion"].startswith("monitoring.coreos.com/")]))
        return 0
    if mode == "names":
        problems = names(docs, sys.argv[3])
        for p in problems:
            print(p)
        return 1 if problems else 0
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
        if "admin_listen" in config:
            config["admin_listen"] = {"address": "127.0.0.1", "port": 0}
        print(yaml.safe_dump(config, sort_keys=False))
        return 0
    problems = {"defaults": defaults, "custom": custom, "full": full}[mode](docs)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
