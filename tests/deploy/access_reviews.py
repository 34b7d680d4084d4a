#!/usr/bin/env python3
"""Asks the API server, as each ServiceAccount, whether it may do each thing in a table.

What `kubectl auth can-i VERB RESOURCE --token T` asks (a SelfSubjectAccessReview per
question), but all of one identity's questions in a single `kubectl create`, so a matrix of a
few hundred checks takes seconds instead of minutes (used by helm_chart_test.sh).

  access_reviews.py KUBECTL TABLE NAME=TOKEN...

TABLE: tab-separated lines WHO WANT NAMESPACE VERB RESOURCE [SUBRESOURCE]
  WHO        one of the NAMEs
  WANT       yes | no
  NAMESPACE  a namespace, or * for all namespaces / cluster scope
  RESOURCE   plural[.group][/name], e.g. pods, leases.coordination.k8s.io/kinference-controller
Prints "ok - ..." or "FAIL - ..." per line; exits 1 if any failed.
"""
import json
import subprocess
import sys


def review(ns, verb, resource, subresource):
    name = ""
    if "/" in resource:
        resource, name = resource.split("/", 1)
    plural, _, group = resource.partition(".")
    attrs = {"verb": verb, "resource": plural, "group": group}
    if ns != "*":
        attrs["namespace"] = ns
    if name:
        attrs["name"] = name
    if subresource:
        attrs["subresource"] = subresource
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs}}


def decode_stream(text):
    dec, i, out = json.JSONDecoder(), 0, []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.extend(obj["items"] if obj.get("kind") == "List" else [obj])


def main():
    kubectl, table = sys.argv[1], sys.argv[2]
    tokens = dict(arg.split("=", 1) for arg in sys.argv[3:])
    rows = [line.rstrip("\n").split("\t") for line in open(table) if line.strip()]
    failures = 0
    for who, token in tokens.items():
        mine = [r for r in rows if r[0] == who]
        if not mine:
            continue
        docs = [review(r[2], r[3], r[4], r[5] if len(r) > 5 else "") for r in mine]
        # --validate=false: client-side validation would need to list CRDs, which these
        # identities may not do.
        p = subprocess.run([kubectl, "create", "--validate=false", "-f", "-", "-o", "json", "--token", token],
                           input="\n---\n".join(json.dumps(d) for d in docs), capture_output=True, text=True)
        if p.returncode != 0:
            print(f"FAIL - {who}: kubectl create SelfSubjectAccessReviews: {p.stderr.strip()}")
            failures += 1
            continue
        answers = decode_stream(p.stdout)
        if len(answers) != len(mine):
            print(f"FAIL - {who}: {len(answers)} answers to {len(mine)} questions")
            failures += 1
            continue
        for r, a in zip(mine, answers):
            got = "yes" if a.get("status", {}).get("allowed") else "no"
            sub = f" --subresource={r[5]}" if len(r) > 5 and r[5] else ""
            what = f"{who}: can-i {r[3]} {r[4]}{sub} in {r[2]} = {r[1]}"
            if got == r[1]:
                print(f"ok - {what}")
            else:
                print(f"FAIL - {what}, got {got}")
                failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
