"""Checks that the deployment artifacts agree with each other and with Strait.

Run by crates/cli/tests/deploy.rs:  python deploy/check.py STRAIT_BINARY
Exits non-zero with one line per problem. What it checks:
- every manifest parses, and kustomization.yaml lists files that exist;
- every ${VAR} in strait.toml is a key of the strait-credentials Secret;
- `strait config validate` accepts strait.toml with the Secret's values;
- the metrics port agrees across strait.toml, the container, both probes, the scrape
  annotation, the Service and the Dockerfile's EXPOSE;
- the config path agrees across the container args, the mount and the Dockerfile's CMD;
- one replica with the Recreate strategy (no scale-out yet: two copies of a flow would
  both write it), and a termination grace period above Strait's stop bound;
- the Dockerfile builds with the same cargo command as scripts/build-static.
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


def load_yaml(name):
    with open(os.path.join(K8S, name)) as f:
        return yaml.safe_load(f)


def read(path):
    with open(path) as f:
        return f.read()


strait = sys.argv[1]
kustomization = load_yaml("kustomization.yaml")
files = list(kustomization["resources"])
for generator in kustomization.get("configMapGenerator", []):
    files.extend(generator["files"])
for name in files + ["servicemonitor.yaml"]:
    check(os.path.exists(os.path.join(K8S, name)), f"kustomization names {name}, which is missing")
docs = {d["kind"]: d for name in kustomization["resources"] for d in [load_yaml(name)]}
deployment, secret, service = docs["Deployment"], docs["Secret"], docs["Service"]
generated = {g["name"] for g in kustomization["configMapGenerator"]}

config_text = read(os.path.join(K8S, "strait.toml"))
config = tomllib.loads(config_text)
secret_keys = set(secret["stringData"])
for var in set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", config_text)):
    check(var in secret_keys, f"strait.toml uses ${{{var}}}, which the Secret does not set")

env = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMARY_", "DR_"))}
env.update(secret["stringData"])
validate = subprocess.run(
    [strait, "config", "validate", "-c", os.path.join(K8S, "strait.toml")],
    env=env, capture_output=True, text=True,
)
check(validate.returncode == 0, f"strait config validate failed: {validate.stderr.strip()}")
passwords = [v for k, v in secret["stringData"].items() if "PASSWORD" in k]
check(not any(p in validate.stdout + validate.stderr for p in passwords),
      "strait config validate printed a secret")

port = int(config["metrics"]["listen"].rsplit(":", 1)[1])
check(config["metrics"]["listen"].startswith("0.0.0.0:"), "metrics must listen on 0.0.0.0 in a pod")
spec = deployment["spec"]
pod = spec["template"]["spec"]
(container,) = pod["containers"]
ports = {p["name"]: p["containerPort"] for p in container["ports"]}
check(ports.get("metrics") == port, f"container metrics port {ports} != {port}")
check(container["readinessProbe"]["httpGet"]["path"] == "/health", "readiness must probe /health")
for probe in ("readinessProbe", "livenessProbe"):
    target = container[probe].get("httpGet") or container[probe].get("tcpSocket")
    check(target["port"] in ("metrics", port), f"{probe} probes {target['port']}")
annotations = spec["template"]["metadata"]["annotations"]
check(annotations["prometheus.io/port"] == str(port), "scrape annotation port differs")
check(annotations["prometheus.io/path"] == "/metrics", "scrape annotation path differs")
check(service["spec"]["ports"][0]["port"] == port, "Service port differs")
check(service["spec"]["selector"] == spec["selector"]["matchLabels"], "Service selector differs")

args = container["args"]
config_path = args[args.index("-c") + 1]
(mount,) = container["volumeMounts"]
check(config_path == os.path.join(mount["mountPath"], "strait.toml"), "args -c is not the mounted file")
(volume,) = pod["volumes"]
check(volume["name"] == mount["name"] and volume["configMap"]["name"] in generated,
      "the mounted ConfigMap is not the generated one")
check(container["envFrom"][0]["secretRef"]["name"] == secret["metadata"]["name"],
      "envFrom does not name the Secret")

check(spec["replicas"] == 1, "replicas must be 1 until scale-out is built")
check(spec["strategy"]["type"] == "Recreate", "strategy must be Recreate (never two writers)")
request_timeout = 30  # seconds: the clusters' default request_timeout
check(pod["terminationGracePeriodSeconds"] > 2 * request_timeout + 5,
      "terminationGracePeriodSeconds is below the stop bound (2 x request_timeout + 5 s)")

dockerfile = read(os.path.join(ROOT, "Dockerfile"))
build_static = read(os.path.join(ROOT, "scripts", "build-static"))
(cargo,) = re.findall(r"^cargo build .*$", build_static, re.M)
check(cargo in dockerfile, f"the Dockerfile does not build with `{cargo}`")
check(f"EXPOSE {port}" in dockerfile, "Dockerfile EXPOSE differs from the metrics port")
check(f'CMD ["run", "-c", "{config_path}"]' in dockerfile, "Dockerfile CMD config path differs")
check("FROM scratch" in dockerfile, "the image must be FROM scratch")

for p in problems:
    print(p)
sys.exit(1 if problems else 0)
