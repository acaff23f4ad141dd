use std::path::PathBuf;

use anyhow::Context as _;

use super::*;

#[test]
fn a_config_that_does_not_load_is_a_usage_error_whatever_context_wraps_it() {
    let e = ConfigError::Read {
        path: PathBuf::from("/nonexistent/strait.toml"),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    };
    let e = Err::<(), _>(e).context("flow a").unwrap_err();
    assert_eq!(of_error(&e), Exit::Usage);
}

#[test]
fn an_unreachable_cluster_is_told_apart_from_a_failure() {
    let unreachable = MirrorError::unreachable(
        "127.0.0.1:1",
        std::time::Duration::from_secs(3),
        strait_client::Error::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
    );
    assert_eq!(
        of_error(&anyhow::Error::new(unreachable)),
        Exit::Unreachable
    );
    let other = MirrorError::other("the state topic is corrupt");
    assert_eq!(of_error(&anyhow::Error::new(other)), Exit::Failure);
    assert_eq!(of_error(&anyhow::anyhow!("anything")), Exit::Failure);
}

#[test]
fn the_codes_are_the_documented_numbers() {
    let codes: Vec<u8> = [
        Exit::Ok,
        Exit::Failure,
        Exit::Usage,
        Exit::Unreachable,
        Exit::Refused,
        Exit::NotYetReplicated,
    ]
    .into_iter()
    .map(|e| e as u8)
    .collect();
    assert_eq!(codes, [0, 1, 2, 3, 4, 5]);
}
