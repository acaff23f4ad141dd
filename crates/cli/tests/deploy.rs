//! The deployment artifacts (Dockerfile, deploy/kubernetes) agree with each other and with
//! the binary: deploy/check.py parses the manifests (PyYAML, in the test venv) and runs
//! `strait config validate` on the ConfigMap's file with the Secret's values. The image
//! itself cannot be built here (no container engine); docs/operations.md says so.

use std::path::Path;
use std::process::Command;

#[test]
fn the_kubernetes_manifests_and_dockerfile_agree_with_strait() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = strait_testkit::paths::python().expect("the test venv's python");
    let out = Command::new(python)
        .arg(root.join("deploy/check.py"))
        .arg(env!("CARGO_BIN_EXE_strait"))
        .output()
        .expect("run deploy/check.py");
    assert!(
        out.status.success(),
        "deploy/check.py found problems:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
