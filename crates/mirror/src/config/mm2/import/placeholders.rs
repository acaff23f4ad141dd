//! `${…}` references in MM2 values → Strait `${VAR}` references.
//!
//! - `${NAME}` (a deployment template filled in before MM2 starts) stays `${NAME}`;
//! - `${env:NAME}` (Kafka's EnvVarConfigProvider) becomes `${NAME}`;
//! - `${file:path:key}`, `${directory:path:file}` and any other provider's
//!   `${provider:path:key}` become `${VAR}`, `VAR` derived from the key, with the shell
//!   command (or the instruction) that exports it.
//!
//! A converted value carries each reference between [`OPEN`] and [`CLOSE`], two
//! private-use characters that [`super::literal`] leaves alone, so literal `${` in the rest
//! of the value is still escaped; [`resolve`] turns them into `${` and `}` once the TOML
//! is written.

/// Stands for `${` in a converted value until the TOML is written.
pub(super) const OPEN: char = '\u{E000}';
/// Stands for `}` in a converted value until the TOML is written.
pub(super) const CLOSE: char = '\u{E001}';

/// Where a referenced value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Source {
    /// An environment variable, by `${NAME}` or `${env:NAME}`.
    Env,
    /// A key of a properties file (`${file:path:key}`).
    File {
        /// The properties file.
        path: String,
        /// The key in it.
        key: String,
    },
    /// A file of a directory (`${directory:path:file}`).
    Directory {
        /// The directory.
        path: String,
        /// The file in it.
        file: String,
    },
    /// A key of a Kubernetes Secret, as Strimzi passes credentials
    /// (`${k8s-secret:<secret>:<key>}`, written by the Strimzi form).
    KubernetesSecret {
        /// The Secret's name.
        secret: String,
        /// The key in it.
        key: String,
    },
    /// A file made of keys of a Kubernetes Secret (certificates, private keys:
    /// `${k8s-secret-file:<secret>:<key>[+<key>…]}`); the variable holds its path.
    KubernetesSecretFile {
        /// The Secret's name.
        secret: String,
        /// Its keys, concatenated into the file.
        keys: Vec<String>,
    },
    /// Another config provider, which only the MM2 worker could resolve.
    Provider {
        /// The provider's name in `config.providers`.
        name: String,
        /// Its path argument (may be empty).
        path: String,
        /// Its key argument.
        key: String,
    },
}

/// One `${…}` reference of a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Reference {
    /// The Strait variable it became.
    pub var: String,
    /// Where its value comes from.
    pub source: Source,
}

impl Reference {
    /// Only an environment variable (`${NAME}` or `${env:NAME}`).
    pub fn is_env(&self) -> bool {
        self.source == Source::Env
    }

    /// Where the variable's value comes from and how to set it (for the list of variables
    /// to export, after the variable's name); never a value.
    pub fn how_to_export(&self) -> String {
        let var = &self.var;
        match &self.source {
            Source::Env => "from the environment, as for MM2".to_owned(),
            Source::File { path, key } => format!(
                "from `${{file:{path}:{key}}}`: export {var}=\"$(sed -n 's/^{k}[[:space:]]*[=:][[:space:]]*//p' {p})\"",
                k = sed_key(key),
                p = sh(path)
            ),
            Source::Directory { path, file } => format!(
                "from `${{directory:{path}:{file}}}`: export {var}=\"$(cat {})\"",
                sh(&format!("{}/{file}", path.trim_end_matches('/')))
            ),
            Source::KubernetesSecret { secret, key } => format!(
                "key `{key}` of Kubernetes Secret `{secret}`: export {var}=\"$(kubectl get secret {secret} \
                 -o jsonpath='{{.data.{}}}' | base64 -d)\"",
                jsonpath_key(key)
            ),
            Source::KubernetesSecretFile { secret, keys } => {
                let file = format!("/etc/strait/{secret}-{}", keys.join("-"));
                let steps: Vec<String> = keys
                    .iter()
                    .enumerate()
                    .map(|(i, k)| {
                        format!(
                            "kubectl get secret {secret} -o jsonpath='{{.data.{}}}' | base64 -d {} {file}",
                            jsonpath_key(k),
                            if i == 0 { ">" } else { ">>" }
                        )
                    })
                    .collect();
                format!(
                    "a file of key(s) {} of Kubernetes Secret `{secret}`: {}; export {var}={file}",
                    keys.iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(" + "),
                    steps.join("; ")
                )
            }
            Source::Provider { name, path, key } => format!(
                "from config provider `{name}` (path `{path}`, key `{key}`): Strait has no config \
                 providers; export {var} with the value the provider returns"
            ),
        }
    }
}

/// A value whose `${…}` could not be read as a reference (`${a.b}`, `${:x}`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Unconvertible;

/// The value with each reference replaced by `OPEN VAR CLOSE`, and the references; `None`
/// when there is no `${` at all.
pub(super) fn convert(value: &str) -> Result<Option<(String, Vec<Reference>)>, Unconvertible> {
    if !value.contains("${") {
        return Ok(None);
    }
    let mut out = String::new();
    let mut refs = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            // No closing brace: a literal `${`, as Kafka reads it.
            out.push_str(&rest[at..]);
            rest = "";
            break;
        };
        let r = reference(&after[..end]).ok_or(Unconvertible)?;
        out.push(OPEN);
        out.push_str(&r.var);
        out.push(CLOSE);
        refs.push(r);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(Some((out, refs)))
}

/// `NAME`, `env:NAME`, `file:path:key`, `directory:path:file`, `provider:[path:]key`.
fn reference(inner: &str) -> Option<Reference> {
    if is_var_name(inner) {
        return Some(Reference {
            var: inner.to_owned(),
            source: Source::Env,
        });
    }
    let (provider, rest) = inner.split_once(':')?;
    let (path, key) = rest.split_once(':').unwrap_or(("", rest));
    if provider.is_empty() || key.is_empty() {
        return None;
    }
    let source = match provider {
        "env" if path.is_empty() && is_var_name(key) => {
            return Some(Reference {
                var: key.to_owned(),
                source: Source::Env,
            });
        }
        "file" => Source::File {
            path: path.to_owned(),
            key: key.to_owned(),
        },
        "directory" => Source::Directory {
            path: path.to_owned(),
            file: key.to_owned(),
        },
        "k8s-secret" => {
            return Some(Reference {
                var: var_name(&format!("{path}_{key}")),
                source: Source::KubernetesSecret {
                    secret: path.to_owned(),
                    key: key.to_owned(),
                },
            });
        }
        "k8s-secret-file" => {
            return Some(Reference {
                var: var_name(&format!("{path}_{}_file", key.replace('+', "_"))),
                source: Source::KubernetesSecretFile {
                    secret: path.to_owned(),
                    keys: key.split('+').map(str::to_owned).collect(),
                },
            });
        }
        _ => Source::Provider {
            name: provider.to_owned(),
            path: path.to_owned(),
            key: key.to_owned(),
        },
    };
    Some(Reference {
        var: var_name(key),
        source,
    })
}

/// A name Strait's `${NAME}` accepts: letters, digits and `_`, not starting with a digit.
fn is_var_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `us-east.1` → `US_EAST_1`: upper case, every other character `_`.
pub(super) fn upper_snake(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// `sasl.password` → `SASL_PASSWORD`; `1st-key` → `VAR_1ST_KEY`.
pub(super) fn var_name(key: &str) -> String {
    let mut v = upper_snake(key);
    if v.is_empty() || v.starts_with(|c: char| c.is_ascii_digit()) {
        v.insert_str(0, "VAR_");
    }
    v
}

/// `OPEN VAR CLOSE` → `${VAR}` in written text.
pub(super) fn resolve(text: &str) -> String {
    text.replace(OPEN, "${").replace(CLOSE, "}")
}

/// A Secret key in a kubectl JSONPath (`ca.crt` → `ca\.crt`).
fn jsonpath_key(key: &str) -> String {
    key.replace('.', "\\.")
}

/// A key as a `sed` basic regex.
fn sed_key(key: &str) -> String {
    key.chars()
        .flat_map(|c| {
            let escape = ".[]*^$\\/".contains(c).then_some('\\');
            escape.into_iter().chain(std::iter::once(c))
        })
        .collect()
}

/// A path quoted for a POSIX shell.
fn sh(path: &str) -> String {
    format!("'{}'", path.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests;
