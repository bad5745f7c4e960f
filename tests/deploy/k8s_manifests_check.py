#!/usr/bin/env python3
"""Offline structural checks of the Kubernetes manifests in deploy/k8s.

No cluster and no Kubernetes schema here (kubeconform and kubectl are not
packaged in Debian 12), so this checks what the manifests must agree on
among themselves and with the daemons' flags: every workload's selector
matches its pod labels; volumes that are mounted exist; --tls-dir is a
mount of the gradsync-tls Secret; the coordinator's --state-db lies on its
claim template; the Service selects the coordinator and names its port;
every daemon serves --metrics-listen on its declared port 'metrics' and
--health-listen on its port 'health', with gRPC readiness (service
gradsync.ready) and liveness probes on that port; a daemon with
--listen declares that port; every $(VAR) in args is defined; the GPU worker requests as
many nvidia.com/gpu as it offers CUDA ranks; kustomization lists real files.

  k8s_manifests_check.py DIR      exit 0 and "k8s_manifests_check: OK", or
                                  1 and one line per problem
"""
import pathlib
import re
import sys

import yaml

WORKLOADS = ("StatefulSet", "DaemonSet", "Deployment")


def arg_value(args, flag):
    for arg in args:
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1:]
    return None


def main(directory):
    problems = []
    objects = []
    root = pathlib.Path(directory)
    for path in sorted(root.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is None:
                continue
            for field in ("apiVersion", "kind", "metadata"):
                if field not in doc:
                    problems.append(f"{path.name}: a document has no {field}")
            objects.append((path.name, doc))
    by_kind = {}
    for name, doc in objects:
        key = (doc.get("kind"), doc.get("metadata", {}).get("name"))
        by_kind[key] = (name, doc)

    def need(kind, name):
        if (kind, name) not in by_kind:
            problems.append(f"no {kind} {name}")
            return None
        return by_kind[(kind, name)][1]

    config = need("ConfigMap", "gradsync")
    config_data = (config or {}).get("data", {})
    service = need("Service", "gradsync-coordinator")
    coordinator = need("StatefulSet", "gradsync-coordinator")
    need("DaemonSet", "gradsync-worker")
    gpu_worker = need("DaemonSet", "gradsync-worker-gpu")
    need("Deployment", "gradsync-ps")

    for file, doc in objects:
        if doc.get("kind") not in WORKLOADS:
            continue
        where = f"{file}: {doc['kind']} {doc['metadata']['name']}"
        if doc.get("apiVersion") != "apps/v1":
            problems.append(f"{where}: apiVersion is not apps/v1")
        spec = doc.get("spec", {})
        template = spec.get("template", {})
        labels = template.get("metadata", {}).get("labels", {})
        match = spec.get("selector", {}).get("matchLabels", {})
        if not match or any(labels.get(k) != v for k, v in match.items()):
            problems.append(f"{where}: selector {match} does not match the pod labels {labels}")
        pod = template.get("spec", {})
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        claims = {c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])}
        containers = pod.get("containers", [])
        if not containers:
            problems.append(f"{where}: no containers")
        for c in containers:
            cwhere = f"{where} container {c.get('name')}"
            for field in ("name", "image", "command", "args"):
                if not c.get(field):
                    problems.append(f"{cwhere}: no {field}")
            args = c.get("args", [])
            mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
            for path, volume in mounts.items():
                if volume not in volumes and volume not in claims:
                    problems.append(f"{cwhere}: mounts {volume}, which is neither a volume nor a claim")
            tls_dir = arg_value(args, "--tls-dir")
            if tls_dir is None:
                problems.append(f"{cwhere}: no --tls-dir (the cluster runs mTLS)")
            else:
                volume = volumes.get(mounts.get(tls_dir, ""), {})
                if volume.get("secret", {}).get("secretName") != "gradsync-tls":
                    problems.append(f"{cwhere}: --tls-dir {tls_dir} is not a mount of Secret gradsync-tls")
            defined = {e["name"] for e in c.get("env", [])}
            for source in c.get("envFrom", []):
                ref = source.get("configMapRef", {}).get("name")
                if ref != "gradsync":
                    problems.append(f"{cwhere}: envFrom names ConfigMap {ref}, not gradsync")
                else:
                    defined |= set(config_data)
            for arg in args:
                for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", arg):
                    if var not in defined:
                        problems.append(f"{cwhere}: {arg} uses $({var}), which nothing defines")
            listen = arg_value(args, "--listen")
            if listen is not None:
                port = int(listen.rsplit(":", 1)[1])
                ports = {p["containerPort"] for p in c.get("ports", [])}
                if port not in ports:
                    problems.append(f"{cwhere}: listens on {port} but declares ports {sorted(ports)}")
            # Every daemon: /metrics, and gRPC health probes on its plaintext
            # --health-listen port (the gRPC port speaks only TLS, which
            # Kubernetes' probes cannot).
            named = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
            metrics = arg_value(args, "--metrics-listen")
            if metrics is None:
                problems.append(f"{cwhere}: no --metrics-listen (/metrics)")
            elif named.get("metrics") != int(metrics.rsplit(":", 1)[1]):
                problems.append(f"{cwhere}: serves metrics on {metrics.rsplit(':', 1)[1]} but its port 'metrics' is {named.get('metrics')}")
            health = arg_value(args, "--health-listen")
            if health is None:
                problems.append(f"{cwhere}: no --health-listen (the probes' gRPC health port)")
                continue
            port = int(health.rsplit(":", 1)[1])
            if named.get("health") != port:
                problems.append(f"{cwhere}: serves health checks on {port} but its port 'health' is {named.get('health')}")
            for probe, service in (("readinessProbe", "gradsync.ready"),
                                   ("livenessProbe", "")):
                grpc = c.get(probe, {}).get("grpc")
                if not grpc:
                    problems.append(f"{cwhere}: no gRPC {probe}")
                elif grpc.get("port") != port:
                    # grpc: takes a number only, no port name.
                    problems.append(f"{cwhere}: {probe} probes port {grpc.get('port')}, not {port}")
                elif grpc.get("service", "") != service:
                    problems.append(f"{cwhere}: {probe} asks service '{grpc.get('service', '')}', not '{service}'")

    if coordinator:
        pod = coordinator["spec"]["template"]
        c = pod["spec"]["containers"][0]
        state_db = arg_value(c.get("args", []), "--state-db")
        claims = {t["metadata"]["name"] for t in coordinator["spec"].get("volumeClaimTemplates", [])}
        on_claim = [m for m in c.get("volumeMounts", [])
                    if m["name"] in claims and state_db
                    and state_db.startswith(m["mountPath"].rstrip("/") + "/")]
        if not on_claim:
            problems.append(f"coordinator: --state-db {state_db} is not on a volumeClaimTemplate")
        if coordinator["spec"].get("replicas") != 1:
            problems.append("coordinator: replicas must be 1 (one coordinator per state database)")
        if service:
            if coordinator["spec"].get("serviceName") != service["metadata"]["name"]:
                problems.append("coordinator: serviceName is not the coordinator's Service")
            labels = pod["metadata"]["labels"]
            selector = service["spec"].get("selector", {})
            if not selector or any(labels.get(k) != v for k, v in selector.items()):
                problems.append("Service gradsync-coordinator does not select the coordinator's pod")
            names = {p.get("name") for p in c.get("ports", [])}
            for p in service["spec"].get("ports", []):
                if p.get("targetPort") not in names | {p.get("port")}:
                    problems.append(f"Service gradsync-coordinator targets {p.get('targetPort')}, not a container port")
            address = config_data.get("GRADSYNC_COORDINATOR", "")
            ports = {str(p["port"]) for p in service["spec"].get("ports", [])}
            host, _, port = address.rpartition(":")
            if host != service["metadata"]["name"] or port not in ports:
                problems.append(f"ConfigMap GRADSYNC_COORDINATOR {address} is not the Service's name and port")

    if gpu_worker:
        c = gpu_worker["spec"]["template"]["spec"]["containers"][0]
        gpus = c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu")
        devices = arg_value(c.get("args", []), "--devices") or ""
        match = re.fullmatch(r"cuda:([0-9,]+)", devices)
        if not gpus:
            problems.append("worker-gpu: no nvidia.com/gpu limit")
        elif not match or len(match.group(1).split(",")) != int(gpus):
            problems.append(f"worker-gpu: --devices {devices} does not offer the {gpus} GPUs it requests")

    kustomization = root / "kustomization.yaml"
    if kustomization.exists():
        for resource in yaml.safe_load(kustomization.read_text()).get("resources", []):
            if not (root / resource).is_file():
                problems.append(f"kustomization.yaml lists {resource}, which does not exist")
    else:
        problems.append("no kustomization.yaml")

    for p in problems:
        print(f"k8s_manifests_check: {p}")
    if problems:
        return 1
    print(f"k8s_manifests_check: OK ({len(objects)} objects)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
