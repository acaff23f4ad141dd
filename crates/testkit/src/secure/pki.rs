//! [`TestPki`]: the per-run CA and certificates `py/test_pki.py` writes.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;

use crate::error::{Error, Result, io};
use crate::paths;

/// A throwaway PKI: PEM files written by `py/test_pki.py`. Every field except `dir` is the
/// absolute path of one file in `dir`. Keys are unencrypted; certificates are valid from
/// an hour ago for 30 days (except `expired_cert`).
#[derive(Debug, Deserialize)]
pub struct TestPki {
    /// The directory holding every file.
    #[serde(skip)]
    pub dir: PathBuf,
    /// `ca.pem`: the test CA (EC P-256), the trust anchor for everything below that is
    /// not `other_*`.
    pub ca_cert: PathBuf,
    /// `ca.key` (PKCS#8).
    pub ca_key: PathBuf,
    /// `server.pem`: CN=localhost, SAN IP 127.0.0.1 and DNS localhost, RSA-2048 key.
    pub server_cert: PathBuf,
    /// `server.key` (RSA, PKCS#8).
    pub server_key: PathBuf,
    /// `server-chain.pem`: `server.pem` followed by `ca.pem`.
    pub server_chain: PathBuf,
    /// `client.pem`: CN=strait-client, clientAuth, EC P-256 key.
    pub client_cert: PathBuf,
    /// `client.key`: the EC key in PKCS#8 (`BEGIN PRIVATE KEY`).
    pub client_key: PathBuf,
    /// `client.sec1.key`: the same EC key in SEC1 form (`BEGIN EC PRIVATE KEY`).
    pub client_key_sec1: PathBuf,
    /// `client-bundle.pem`: `client.pem` followed by `client.key`.
    pub client_bundle: PathBuf,
    /// `client-rsa.pem`: CN=strait-client-rsa, clientAuth, RSA-2048 key.
    pub client_rsa_cert: PathBuf,
    /// `client-rsa.key`: the RSA key in PKCS#8.
    pub client_rsa_key: PathBuf,
    /// `client-rsa.pkcs1.key`: the same RSA key in PKCS#1 (`BEGIN RSA PRIVATE KEY`).
    pub client_rsa_key_pkcs1: PathBuf,
    /// `expired.pem`: like the server cert (127.0.0.1 + localhost) but expired a day ago.
    pub expired_cert: PathBuf,
    /// `expired.key` (EC, PKCS#8).
    pub expired_key: PathBuf,
    /// `wrong-host.pem`: signed by the CA, SAN only DNS `wrong.example`.
    pub wrong_host_cert: PathBuf,
    /// `wrong-host.key` (EC, PKCS#8).
    pub wrong_host_key: PathBuf,
    /// `other-ca.pem`: an unrelated CA.
    pub other_ca_cert: PathBuf,
    /// `other-ca.key`.
    pub other_ca_key: PathBuf,
    /// `other-server.pem`: a server cert for 127.0.0.1 + localhost signed by `other-ca`.
    pub other_server_cert: PathBuf,
    /// `other-server.key`.
    pub other_server_key: PathBuf,
    /// `other-client.pem`: a client cert signed by `other-ca` (mutual TLS refuses it).
    pub other_client_cert: PathBuf,
    /// `other-client.key`.
    pub other_client_key: PathBuf,
    #[serde(skip)]
    temp: Option<tempfile::TempDir>,
}

impl TestPki {
    /// Generates a fresh PKI into `dir` (created if missing; files are overwritten).
    pub fn generate(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
        let python = paths::python()?;
        let script = paths::testkit_script("test_pki.py");
        let out = Command::new(&python)
            .arg(&script)
            .arg(dir)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .output()
            .map_err(io(format!("running {}", script.display())))?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            return Err(Error::ServerStart {
                what: "test_pki.py".into(),
                reason: out.status.to_string(),
                stderr,
            });
        }
        let mut pki: TestPki =
            serde_json::from_slice(&out.stdout).map_err(|e| Error::ServerStart {
                what: "test_pki.py".into(),
                reason: format!("unexpected output: {e}"),
                stderr,
            })?;
        pki.dir = dir.to_path_buf();
        Ok(pki)
    }

    /// Generates a fresh PKI in a temporary directory removed when the value is dropped.
    pub fn generate_temp() -> Result<Self> {
        let temp = tempfile::Builder::new()
            .prefix("strait-pki-")
            .tempdir()
            .map_err(io("creating a temp dir for the PKI"))?;
        let mut pki = Self::generate(temp.path())?;
        pki.temp = Some(temp);
        Ok(pki)
    }

    /// Reads one of the files (a PEM) as text.
    pub fn read(path: &Path) -> Result<String> {
        fs::read_to_string(path).map_err(io(format!("reading {}", path.display())))
    }

    /// The CA certificate as PEM text.
    pub fn ca_pem(&self) -> Result<String> {
        Self::read(&self.ca_cert)
    }
}
