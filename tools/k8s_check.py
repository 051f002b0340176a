#!/usr/bin/env python3
"""Offline check of installer/k8s (no cluster needed): every document has the fields its kind
requires, names what it refers to (Services and autoscalers their targets, probes a container
port, volumes a claim or Secret), and every quire-server argument is an option the program takes
(read from `quire-server --help`). Exit 0 when sound; otherwise each problem on a line, exit 1.

    tools/k8s_check.py installer/k8s --server build/app/quire-server
"""
import argparse
import glob
import os
import re
import subprocess
import sys

import yaml

KNOWN = {
    ("v1", "Namespace"), ("v1", "Service"), ("v1", "PersistentVolumeClaim"), ("v1", "Secret"),
    ("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("batch/v1", "Job"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
}


def get(obj, path, default=None):
    for key in path.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return default
        obj = obj[key]
    return obj


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--server", required=True, help="the quire-server program (its --help lists the options)")
    args = ap.parse_args()
    usage = subprocess.run([args.server, "--help"], capture_output=True, text=True, check=True).stdout
    server_options = set(re.findall(r"--[a-z][a-z-]+", usage))
    problems = []
    docs = []
    for path in sorted(glob.glob(os.path.join(args.folder, "*.yaml"))):
        with open(path, encoding="utf-8") as f:
            try:
                for d in yaml.safe_load_all(f):
                    if d is not None:
                        docs.append((os.path.basename(path), d))
            except yaml.YAMLError as e:
                problems.append(f"{path}: not YAML: {e}")
    if not docs:
        problems.append(f"{args.folder}: no manifests")
    namespaces = {get(d, "metadata.name") for _, d in docs if d.get("kind") == "Namespace"}
    by_kind = {}
    for f, d in docs:
        by_kind.setdefault(d.get("kind"), []).append((f, d))

    def where(f, d):
        return f"{f}: {d.get('kind')} {get(d, 'metadata.name')}"

    pod_templates = []  # (file, doc, pod spec, pod labels)
    for f, d in docs:
        key = (d.get("apiVersion"), d.get("kind"))
        if key not in KNOWN:
            problems.append(f"{f}: unknown apiVersion/kind {key}")
            continue
        if not get(d, "metadata.name"):
            problems.append(f"{f}: {d.get('kind')} without metadata.name")
        ns = get(d, "metadata.namespace")
        if d["kind"] != "Namespace" and ns not in namespaces:
            problems.append(f"{where(f, d)}: namespace {ns!r} is not defined here")
        if d["kind"] in ("Deployment", "StatefulSet"):
            sel = get(d, "spec.selector.matchLabels") or {}
            labels = get(d, "spec.template.metadata.labels") or {}
            if not sel or any(labels.get(k) != v for k, v in sel.items()):
                problems.append(f"{where(f, d)}: selector {sel} does not match the template's labels {labels}")
            pod_templates.append((f, d, get(d, "spec.template.spec") or {}, labels))
        if d["kind"] == "StatefulSet" and not get(d, "spec.serviceName"):
            problems.append(f"{where(f, d)}: no serviceName")
        if d["kind"] == "Job":
            if get(d, "spec.completionMode") == "Indexed" and not isinstance(get(d, "spec.completions"), int):
                problems.append(f"{where(f, d)}: an indexed Job needs completions")
            pod = get(d, "spec.template.spec") or {}
            if pod.get("restartPolicy") not in ("Never", "OnFailure"):
                problems.append(f"{where(f, d)}: a Job's pods restart Never or OnFailure")
            pod_templates.append((f, d, pod, get(d, "spec.template.metadata.labels") or {}))
        if d["kind"] == "PersistentVolumeClaim" and not get(d, "spec.resources.requests.storage"):
            problems.append(f"{where(f, d)}: no storage request")

    claims = {get(d, "metadata.name") for _, d in by_kind.get("PersistentVolumeClaim", [])}
    workloads = {(d["kind"], get(d, "metadata.name")) for f, d, _, _ in pod_templates}
    for f, d, pod, labels in pod_templates:
        containers = pod.get("containers") or []
        if not containers:
            problems.append(f"{where(f, d)}: no containers")
        volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        for t in get(d, "spec.volumeClaimTemplates") or []:  # a StatefulSet's own volumes
            volumes[get(t, "metadata.name")] = {"name": get(t, "metadata.name")}
        for v in volumes.values():
            claim = get(v, "persistentVolumeClaim.claimName")
            if claim is not None and claim not in claims:
                problems.append(f"{where(f, d)}: volume {v['name']} names claim {claim!r}, not defined here")
            if "secret" in v and not get(v, "secret.secretName"):
                problems.append(f"{where(f, d)}: volume {v['name']} names no Secret")
        for c in containers:
            if not c.get("name") or not c.get("image"):
                problems.append(f"{where(f, d)}: a container without name or image")
            ports = {p.get("name"): p.get("containerPort") for p in c.get("ports") or []}
            for m in c.get("volumeMounts") or []:
                if m.get("name") not in volumes:
                    problems.append(f"{where(f, d)}: mount {m.get('name')!r} has no volume")
            for probe in ("livenessProbe", "readinessProbe"):
                port = get(c, f"{probe}.httpGet.port")
                if port is not None and port not in ports and port not in ports.values():
                    problems.append(f"{where(f, d)}: {probe} port {port!r} is not a container port")
            argv = list(c.get("command") or []) + list(c.get("args") or [])
            if c.get("image", "").startswith("quire-server") and not c.get("command"):
                for a in argv:
                    if a.startswith("--") and a not in server_options:
                        problems.append(f"{where(f, d)}: quire-server takes no option {a}")
                if "--worker" in argv or "--redis" in argv:
                    paths = {get(c, "livenessProbe.httpGet.path"), get(c, "readinessProbe.httpGet.path")}
                    if paths != {"/healthz", "/readyz"}:
                        problems.append(f"{where(f, d)}: probes should be /healthz (liveness) and /readyz (readiness)")
                if "--token-file" in argv:
                    token = argv[argv.index("--token-file") + 1]
                    mounted = [m for m in c.get("volumeMounts") or [] if token.startswith(m.get("mountPath", "") + "/")]
                    if not mounted or "secret" not in volumes.get(mounted[0]["name"], {}):
                        problems.append(f"{where(f, d)}: the token file {token} is not on a Secret volume")
                if "--worker" in argv and not get(c, "resources.limits", {}).get("nvidia.com/gpu"):
                    problems.append(f"{where(f, d)}: a GPU worker without an nvidia.com/gpu limit")
    for f, d in by_kind.get("Service", []):
        sel = get(d, "spec.selector") or {}
        if not any(all(labels.get(k) == v for k, v in sel.items()) for _, _, _, labels in pod_templates if sel):
            problems.append(f"{where(f, d)}: selector {sel} selects no pod defined here")
    for f, d in by_kind.get("HorizontalPodAutoscaler", []):
        t = get(d, "spec.scaleTargetRef") or {}
        if (t.get("kind"), t.get("name")) not in workloads:
            problems.append(f"{where(f, d)}: scales {t.get('kind')} {t.get('name')}, not defined here")
        if not get(d, "spec.maxReplicas"):
            problems.append(f"{where(f, d)}: no maxReplicas")
        names = [get(m, "object.metric.name") or get(m, "pods.metric.name") or get(m, "external.metric.name")
                 for m in get(d, "spec.metrics") or []]
        if "quire_queue_depth" not in names:
            problems.append(f"{where(f, d)}: does not scale on quire_queue_depth")
    for p in problems:
        print(p)
    if not problems:
        print(f"{args.folder}: {len(docs)} manifests sound")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
