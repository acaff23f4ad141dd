//! The client side of SCRAM (RFC 5802) with SHA-256 / SHA-512 (RFC 7677), as Kafka uses it
//! (KIP-84): a pure state machine, no I/O. Primitives (HMAC, PBKDF2, SHA-2) come from the
//! RustCrypto crates.
//!
//! Rules:
//! - The server's nonce must extend ours; a server that changes it is refused.
//! - The iteration count must lie in `4096..=MAX_ITERATIONS` (RFC 7677's minimum; the cap
//!   keeps a hostile server from making us spin).
//! - The exchange succeeds only when the server's signature (`v=`) proves it knows the
//!   salted password; it is compared in constant time. `e=` from the server is an error.
//! - The password is used as UTF-8 bytes (no SASLprep, like Kafka's Java client).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

use super::config::{ScramHash, Secret};

/// Largest iteration count accepted from a server (Kafka allows up to 16384).
pub const MAX_ITERATIONS: u32 = 100_000;
/// Smallest iteration count accepted (RFC 7677).
pub const MIN_ITERATIONS: u32 = 4096;

/// Why a SCRAM exchange failed. Never carries the password or derived keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    /// The server's message was not valid SCRAM.
    #[error("malformed SCRAM server message: {0}")]
    Malformed(String),
    /// The server's nonce does not start with ours.
    #[error("the server's nonce does not extend the client's")]
    NonceMismatch,
    /// The server asked for too few or too many iterations.
    #[error("iteration count {0} outside {MIN_ITERATIONS}..={MAX_ITERATIONS}")]
    Iterations(u32),
    /// The server reported an error (`e=`), e.g. `invalid-proof` for a wrong password.
    #[error("the server refused the credentials: {0}")]
    Server(String),
    /// The server could not prove it knows the password.
    #[error("the server's signature is wrong: it does not know the password (possible impostor)")]
    BadServerSignature,
    /// A message arrived in the wrong state.
    #[error("unexpected SCRAM message in state {0}")]
    State(&'static str),
}

enum Stage {
    Initial,
    SentFirst,
    SentFinal { server_signature: Vec<u8> },
    Done,
}

/// One SCRAM exchange.
pub struct ScramClient {
    hash: ScramHash,
    username: String,
    password: Secret,
    nonce: String,
    client_first_bare: String,
    stage: Stage,
}

impl std::fmt::Debug for ScramClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramClient")
            .field("hash", &self.hash)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// `saslname` escaping of RFC 5802 §5.1.
fn escape_name(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

fn hmac(hash: ScramHash, key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length, so new_from_slice cannot fail.
    match hash {
        ScramHash::Sha256 => {
            let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }
        ScramHash::Sha512 => {
            let mut m = <Hmac<Sha512> as Mac>::new_from_slice(key).expect("any key length");
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }
    }
}

fn digest(hash: ScramHash, data: &[u8]) -> Vec<u8> {
    match hash {
        ScramHash::Sha256 => Sha256::digest(data).to_vec(),
        ScramHash::Sha512 => Sha512::digest(data).to_vec(),
    }
}

fn salted_password(hash: ScramHash, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
    match hash {
        ScramHash::Sha256 => {
            pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, iterations).to_vec()
        }
        ScramHash::Sha512 => {
            pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, iterations).to_vec()
        }
    }
}

/// `key=value` attributes of a SCRAM message.
fn attributes(msg: &str) -> Result<Vec<(char, &str)>, ScramError> {
    msg.split(',')
        .map(|part| {
            let mut chars = part.chars();
            match (chars.next(), chars.next()) {
                (Some(k), Some('=')) if k.is_ascii_alphabetic() => Ok((k, &part[2..])),
                _ => Err(ScramError::Malformed(format!("attribute {part:?}"))),
            }
        })
        .collect()
}

impl ScramClient {
    /// A new exchange with a random nonce.
    pub fn new(hash: ScramHash, username: &str, password: Secret) -> Self {
        use rand::Rng;
        let raw: [u8; 24] = rand::rng().random();
        Self::with_nonce(hash, username, password, B64.encode(raw))
    }

    /// A new exchange with a given nonce (tests, RFC test vectors).
    pub fn with_nonce(hash: ScramHash, username: &str, password: Secret, nonce: String) -> Self {
        ScramClient {
            hash,
            username: username.to_owned(),
            password,
            nonce,
            client_first_bare: String::new(),
            stage: Stage::Initial,
        }
    }

    /// The client-first message (`n,,n=<user>,r=<nonce>`).
    pub fn client_first(&mut self) -> Vec<u8> {
        self.client_first_bare = format!("n={},r={}", escape_name(&self.username), self.nonce);
        self.stage = Stage::SentFirst;
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// Takes the server-first message and returns the client-final message.
    pub fn server_first(&mut self, msg: &[u8]) -> Result<Vec<u8>, ScramError> {
        if !matches!(self.stage, Stage::SentFirst) {
            return Err(ScramError::State("server-first"));
        }
        let msg = std::str::from_utf8(msg)
            .map_err(|_| ScramError::Malformed("server-first is not UTF-8".into()))?;
        let attrs = attributes(msg)?;
        if let Some((_, e)) = attrs.iter().find(|(k, _)| *k == 'e') {
            return Err(ScramError::Server((*e).to_owned()));
        }
        let get = |key: char| {
            attrs
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
                .ok_or_else(|| ScramError::Malformed(format!("server-first has no {key}=")))
        };
        let nonce = get('r')?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(ScramError::NonceMismatch);
        }
        let salt = B64
            .decode(get('s')?)
            .map_err(|_| ScramError::Malformed("salt is not base64".into()))?;
        let iterations: u32 = get('i')?
            .parse()
            .map_err(|_| ScramError::Malformed("iteration count is not a number".into()))?;
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(ScramError::Iterations(iterations));
        }
        let h = self.hash;
        let salted = salted_password(h, self.password.expose().as_bytes(), &salt, iterations);
        let client_key = hmac(h, &salted, b"Client Key");
        let stored_key = digest(h, &client_key);
        // c= is base64 of the GS2 header "n,," (no channel binding).
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{msg},{without_proof}", self.client_first_bare);
        let client_signature = hmac(h, &stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&client_signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = hmac(h, &salted, b"Server Key");
        let server_signature = hmac(h, &server_key, auth_message.as_bytes());
        self.stage = Stage::SentFinal { server_signature };
        Ok(format!("{without_proof},p={}", B64.encode(proof)).into_bytes())
    }

    /// Takes the server-final message and verifies the server's signature.
    pub fn server_final(&mut self, msg: &[u8]) -> Result<(), ScramError> {
        let Stage::SentFinal { server_signature } = &self.stage else {
            return Err(ScramError::State("server-final"));
        };
        let msg = std::str::from_utf8(msg)
            .map_err(|_| ScramError::Malformed("server-final is not UTF-8".into()))?;
        let attrs = attributes(msg)?;
        if let Some((_, e)) = attrs.iter().find(|(k, _)| *k == 'e') {
            return Err(ScramError::Server((*e).to_owned()));
        }
        let v = attrs
            .iter()
            .find(|(k, _)| *k == 'v')
            .map(|(_, v)| *v)
            .ok_or_else(|| ScramError::Malformed("server-final has no v=".into()))?;
        let got = B64
            .decode(v)
            .map_err(|_| ScramError::Malformed("server signature is not base64".into()))?;
        if !bool::from(got.ct_eq(server_signature)) {
            return Err(ScramError::BadServerSignature);
        }
        self.stage = Stage::Done;
        Ok(())
    }

    /// True once the server's signature was verified.
    pub fn is_done(&self) -> bool {
        matches!(self.stage, Stage::Done)
    }
}

#[cfg(test)]
mod tests;
