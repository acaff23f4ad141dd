//! Where the workspace, the Tansu binary, the Python interpreter and the helper script are.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Environment variable that overrides the Tansu binary.
pub const TANSU_BIN_ENV: &str = "STRAIT_TANSU_BIN";
/// Environment variable that overrides the Python interpreter (a venv with confluent-kafka).
pub const PYTHON_ENV: &str = "STRAIT_PYTHON";

/// The workspace root: two levels above this crate's manifest directory.
pub fn workspace_root() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..");
    dir.canonicalize().unwrap_or(dir)
}

fn from_env_or(var: &str, default: PathBuf) -> PathBuf {
    match std::env::var_os(var) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => default,
    }
}

/// The Tansu binary: `$STRAIT_TANSU_BIN`, else `<workspace>/.tools/tansu/tansu`.
/// Errors (telling you to run `scripts/install-brokers`) if it is not a file.
pub fn tansu_bin() -> Result<PathBuf> {
    let path = from_env_or(
        TANSU_BIN_ENV,
        workspace_root().join(".tools").join("tansu").join("tansu"),
    );
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::TansuMissing { path })
    }
}

/// The Python interpreter: `$STRAIT_PYTHON`, else `<workspace>/.tools/venv/bin/python`.
/// Errors (telling you to run `scripts/install-brokers`) if it is not a file.
pub fn python() -> Result<PathBuf> {
    let path = from_env_or(
        PYTHON_ENV,
        workspace_root()
            .join(".tools")
            .join("venv")
            .join("bin")
            .join("python"),
    );
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::PythonMissing { path })
    }
}

/// The librdkafka helper script, `crates/testkit/py/rdkafka_tool.py`.
pub fn rdkafka_tool_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("py")
        .join("rdkafka_tool.py")
}

/// A helper script in `crates/testkit/py/` by file name (`secure_front.py`,
/// `token_endpoint.py`, `test_pki.py`, ...).
pub fn testkit_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("py").join(name)
}
