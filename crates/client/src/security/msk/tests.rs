use super::*;
use crate::security::oauth::refresh_at;
use aws_credential_types::Credentials;
use aws_credential_types::provider::future;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use std::time::SystemTime;

const KEY_ID: &str = "AKIDEXAMPLE";
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

fn provider() -> MskIamTokenProvider {
    MskIamTokenProvider::from_credentials_provider(
        "eu-west-1",
        Credentials::new(KEY_ID, SECRET_KEY, None, None, "test"),
    )
}

#[tokio::test]
async fn token_is_a_presigned_connect_url_without_the_secret() {
    let p = provider();
    let before = SystemTime::now();
    let token = p.token().await.expect("token");
    let raw = token.value.expose();
    assert!(!raw.contains(SECRET_KEY), "secret key in the token");
    let url = String::from_utf8(B64URL.decode(raw).expect("base64url")).expect("utf-8");
    assert!(
        url.starts_with("https://kafka.eu-west-1.amazonaws.com/?Action=kafka-cluster%3AConnect&"),
        "{url}"
    );
    for part in [
        "X-Amz-Algorithm=AWS4-HMAC-SHA256",
        "X-Amz-Credential=AKIDEXAMPLE%2F",
        "%2Feu-west-1%2Fkafka-cluster%2Faws4_request",
        "X-Amz-Expires=900",
        "X-Amz-Signature=",
    ] {
        assert!(url.contains(part), "{part} missing from {url}");
    }
    assert!(!url.contains(SECRET_KEY), "secret key in the URL");
    assert!(
        !url.contains(&form_urlencoded::byte_serialize(SECRET_KEY.as_bytes()).collect::<String>()),
        "encoded secret key in the URL"
    );
    let exp = token.expires_at.expect("expiry");
    let life = exp.duration_since(before).expect("in the future");
    assert!(
        life > Duration::from_secs(890) && life <= Duration::from_secs(901),
        "{life:?}"
    );
    // Cached: the same signature until 80 % of its life.
    let again = p.token().await.expect("token");
    assert_eq!(again.value.expose(), raw);
    for shown in [
        p.describe(),
        format!("{p:?}"),
        format!("{token:?}"),
        format!(
            "{:?}",
            crate::security::config::SaslConfig::OAuthBearer {
                provider: std::sync::Arc::new(provider()),
                extensions: vec![],
            }
        ),
    ] {
        assert!(!shown.contains(SECRET_KEY), "secret key in {shown}");
        assert!(!shown.contains(raw), "token in {shown}");
    }
    assert_eq!(p.describe(), "AWS MSK IAM (region eu-west-1)");
}

#[tokio::test]
async fn token_lives_no_longer_than_its_credentials() {
    let soon = SystemTime::now() + Duration::from_secs(120);
    let p = MskIamTokenProvider::from_credentials_provider(
        "us-east-1",
        Credentials::new(
            KEY_ID,
            SECRET_KEY,
            Some("session".into()),
            Some(soon),
            "test",
        ),
    );
    let token = p.token().await.expect("token");
    assert_eq!(token.expires_at, Some(soon));
    let url = String::from_utf8(B64URL.decode(token.value.expose()).expect("b64")).expect("utf-8");
    assert!(url.contains("X-Amz-Security-Token=session"), "{url}");
}

#[derive(Debug)]
struct NoCredentials;

impl ProvideCredentials for NoCredentials {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        future::ProvideCredentials::ready(Err(CredentialsError::not_loaded(
            "no providers in chain provided credentials",
        )))
    }
}

#[tokio::test]
async fn missing_credentials_are_a_clear_authentication_error() {
    let p = MskIamTokenProvider::from_credentials_provider("eu-west-1", NoCredentials);
    let e = p.token().await.expect_err("no credentials");
    assert!(matches!(e.kind(), ErrorKind::Authentication(_)), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("no AWS credentials found for MSK IAM (region eu-west-1)"),
        "{msg}"
    );
    assert!(
        msg.contains("no providers in chain provided credentials"),
        "{msg}"
    );
}

#[test]
fn refresh_happens_at_80_percent() {
    let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
    assert_eq!(
        refresh_at(now, Some(now + Duration::from_secs(900)), Duration::ZERO),
        now + Duration::from_secs(720)
    );
    assert_eq!(
        refresh_at(now, Some(now - Duration::from_secs(1)), Duration::ZERO),
        now
    );
    assert_eq!(refresh_at(now, None, Duration::ZERO), now);
}
