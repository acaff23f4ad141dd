"""Checks that the deployment artifacts agree with each other and with Strait.

Run by crates/cli/tests/deploy.rs:  python deploy/check.py STRAIT_BINARY
Exits non-zero with one line per problem. What it checks:
- every YAML file of deploy/kubernetes parses, and kustomization.yaml lists files that exist;
- every ${VAR} in strait.toml is a key of the strait-credentials Secret;
- `strait config validate` accepts strait.toml with the Secret's values, and prints none
  of the passwords;
- more than one replica only if every flow has `[flows.scale_out]` (else two processes
  would both write the flow's target partitions), and the host name (the default
  group.instance.id) is the pod name when a flow leaves instance_id to its default;
- the metrics port agrees across strait.toml, the container, both probes (readiness on
  /health), the scrape annotations, the Service, the ServiceMonitor and the Dockerfile's
  EXPOSE; the config path across the container args, the mount and the Dockerfile's CMD;
- statefulset.yaml has the Deployment's pod template and replicas, and the headless
  Service as its serviceName; the PodDisruptionBudget selects the same pods;
- a termination grace period above Strait's stop bound (2 x request_timeout + 5 s, with
  the largest request_timeout of the config's clusters);
- the pods run as the Dockerfile's numeric non-root USER, with a read-only root file
  system;
- the Dockerfile builds with the same cargo command as scripts/build-static, FROM scratch,
  with the CA bundle.
"""

import os
import re
import subprocess
import sys
import tomllib

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
K8S = os.path.join(HERE, "kubernetes")

problems = []


def check(ok, message):
    if not ok:
        problems.append(message)


def read(path):
    with open(path) as f:
        return f.read()


def load_yaml(name):
    with open(os.path.join(K8S, name)) as f:
        return yaml.safe_load(f)


def seconds(duration):
    """A Strait duration string ("30s", "500ms", "2m", "1h") in seconds."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)", duration.strip())
    if not m:
        raise ValueError(f"unreadable duration {duration!r}")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def validate(strait, path, env):
    return subprocess.run(
        [strait, "config", "validate", "-c", path], env=env, capture_output=True, text=True
    )


strait = sys.argv[1]

# Every manifest parses; the kustomization's files exist.
for name in sorted(os.listdir(K8S)):
    if name.endswith(".yaml"):
        try:
            with open(os.path.join(K8S, name)) as f:
                list(yaml.safe_load_all(f))
        except yaml.YAMLError as e:
            problems.append(f"{name} does not parse: {e}")
kustomization = load_yaml("kustomization.yaml")
files = list(kustomization["resources"])
for generator in kustomization.get("configMapGenerator", []):
    files.extend(generator["files"])
for name in files + ["servicemonitor.yaml", "statefulset.yaml"]:
    check(os.path.exists(os.path.join(K8S, name)), f"{name} is missing")
docs = {d["kind"]: d for name in kustomization["resources"] for d in [load_yaml(name)]}
deployment, secret, service = docs["Deployment"], docs["Secret"], docs["Service"]
pdb = docs["PodDisruptionBudget"]
statefulset = load_yaml("statefulset.yaml")
monitor = load_yaml("servicemonitor.yaml")
generated = {g["name"] for g in kustomization["configMapGenerator"]}

# The config: the Secret provides its variables and the binary accepts it.
config_path_local = os.path.join(K8S, "strait.toml")
config_text = read(config_path_local)
config = tomllib.loads(config_text)
secret_keys = set(secret["stringData"])
for var in set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", config_text)):
    check(var in secret_keys, f"strait.toml uses ${{{var}}}, which the Secret does not set")
env = {k: v for k, v in os.environ.items() if k not in secret_keys}
env.update(secret["stringData"])
result = validate(strait, config_path_local, env)
outputs = result.stdout + result.stderr
check(result.returncode == 0, f"strait config validate failed: {result.stderr.strip()}")
passwords = [v for k, v in secret["stringData"].items() if "PASSWORD" in k]
check(not any(p in outputs for p in passwords), "strait config validate printed a secret")

# Scale-out: several replicas only where every flow is shared through a group.
flows = config["flows"]
replicas = deployment["spec"]["replicas"]
scaled = all("scale_out" in f for f in flows)
check(replicas == 1 or scaled,
      f"{replicas} replicas, but a flow has no [flows.scale_out]: two writers per partition")
check(replicas > 1 or deployment["spec"]["strategy"]["type"] == "Recreate",
      "one unshared replica needs strategy Recreate (never two writers)")
check(statefulset["spec"]["replicas"] == replicas, "StatefulSet replicas differ")
check(statefulset["spec"]["template"] == deployment["spec"]["template"],
      "statefulset.yaml's pod template differs from deployment.yaml's")
check(statefulset["spec"]["serviceName"] == service["metadata"]["name"],
      "the StatefulSet's serviceName is not the headless Service")
check(service["spec"].get("clusterIP") == "None", "the Service must be headless")

# The pod.
spec = deployment["spec"]
pod = spec["template"]["spec"]
(container,) = pod["containers"]
env_vars = {e["name"]: e for e in container.get("env", [])}
if any("instance_id" not in f.get("scale_out", {}) for f in flows if "scale_out" in f):
    hostname = env_vars.get("HOSTNAME", {}).get("valueFrom", {}).get("fieldRef", {})
    check(hostname.get("fieldPath") == "metadata.name",
          "HOSTNAME (the default group.instance.id) must be the pod name")

port = int(config["metrics"]["listen"].rsplit(":", 1)[1])
check(config["metrics"]["listen"].startswith("0.0.0.0:"), "metrics must listen on 0.0.0.0 in a pod")
ports = {p["name"]: p["containerPort"] for p in container["ports"]}
check(ports.get("metrics") == port, f"container metrics port {ports} != {port}")
check(container["readinessProbe"]["httpGet"]["path"] == "/health", "readiness must probe /health")
for probe in ("readinessProbe", "livenessProbe"):
    target = container[probe].get("httpGet") or container[probe].get("tcpSocket")
    check(target["port"] in ("metrics", port), f"{probe} probes {target['port']}")
annotations = spec["template"]["metadata"]["annotations"]
check(annotations["prometheus.io/scrape"] == "true", "scrape annotation missing")
check(annotations["prometheus.io/port"] == str(port), "scrape annotation port differs")
check(annotations["prometheus.io/path"] == "/metrics", "scrape annotation path differs")
check(service["spec"]["ports"][0]["port"] == port, "Service port differs")
labels = spec["selector"]["matchLabels"]
check(service["spec"]["selector"] == labels, "Service selector differs")
check(pdb["spec"]["selector"]["matchLabels"] == labels, "PodDisruptionBudget selector differs")
check(monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items(),
      "the ServiceMonitor does not select the Service")
(endpoint,) = monitor["spec"]["endpoints"]
check((endpoint["port"], endpoint["path"]) == ("metrics", "/metrics"),
      "the ServiceMonitor scrapes another port or path")

args = container["args"]
config_path = args[args.index("-c") + 1]
(mount,) = container["volumeMounts"]
check(config_path == os.path.join(mount["mountPath"], "strait.toml"), "args -c is not the mounted file")
(volume,) = pod["volumes"]
check(volume["name"] == mount["name"] and volume["configMap"]["name"] in generated,
      "the mounted ConfigMap is not the generated one")
check(container["envFrom"][0]["secretRef"]["name"] == secret["metadata"]["name"],
      "envFrom does not name the Secret")

request_timeout = max(
    seconds(c.get("request_timeout", "30s")) for c in config["clusters"].values()
)
bound = 2 * request_timeout + 5
check(pod["terminationGracePeriodSeconds"] > bound,
      f"terminationGracePeriodSeconds is not above the stop bound ({bound:g} s)")
check(container["securityContext"]["readOnlyRootFilesystem"] is True,
      "the root file system must be read-only")
check(pod["securityContext"]["runAsNonRoot"] is True, "runAsNonRoot must be set")

# The Dockerfile.
dockerfile = read(os.path.join(ROOT, "Dockerfile"))
build_static = read(os.path.join(ROOT, "scripts", "build-static"))
(cargo,) = re.findall(r"^cargo build .*$", build_static, re.M)
check(cargo in dockerfile, f"the Dockerfile does not build with `{cargo}`")
check(f"EXPOSE {port}" in dockerfile, "Dockerfile EXPOSE differs from the metrics port")
check(f'CMD ["run", "-c", "{config_path}"]' in dockerfile, "Dockerfile CMD config path differs")
check('ENTRYPOINT ["/strait"]' in dockerfile, "Dockerfile ENTRYPOINT must be /strait")
check(re.search(r"^FROM scratch$", dockerfile, re.M) is not None, "the image must be FROM scratch")
check("/etc/ssl/certs/ca-certificates.crt" in dockerfile, "the image must carry the CA bundle")
users = re.findall(r"^USER (\d+):(\d+)$", dockerfile, re.M)
check(len(users) == 1 and users[0] != ("0", "0"), "the Dockerfile needs one numeric non-root USER")
if len(users) == 1:
    uid, gid = (int(x) for x in users[0])
    check((pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (uid, gid),
          "runAsUser/runAsGroup differ from the Dockerfile's USER")

for p in problems:
    print(p)
sys.exit(1 if problems else 0)
