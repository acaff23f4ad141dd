//! AWS MSK IAM authentication (feature `msk-iam`): a SigV4-presigned
//! `kafka-cluster:Connect` URL for `kafka.<region>.amazonaws.com`, base64url-encoded by
//! [`aws_msk_iam_sasl_signer`] and sent as the OAUTHBEARER token. MSK brokers accept
//! it on their IAM listeners (port 9098 inside the VPC, 9198 public).
//!
//! Credentials come from the AWS SDK's default chain ([`MskIamTokenProvider::new`]):
//! environment variables, the shared config and credentials files (`AWS_PROFILE`), web
//! identity (IRSA on EKS), ECS task roles and the EC2 instance metadata service — or from
//! any credentials provider ([`MskIamTokenProvider::from_credentials_provider`]).
//!
//! A token is valid for 15 minutes (or less, if the credentials expire sooner) and is
//! cached until 80 % of that, so connections opened together share one signature.

use std::fmt;
use std::time::{Duration, UNIX_EPOCH};

use aws_config::Region;
use aws_config::default_provider::credentials::DefaultCredentialsChain;
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};

use super::config::{Secret, Token, TokenFuture, TokenProvider};
use super::oauth::TokenCache;
use crate::error::{Error, ErrorKind, Result};

/// How long loading credentials (IMDS, STS web identity, ECS endpoint…) may take.
const CREDENTIALS_TIMEOUT: Duration = Duration::from_secs(30);

fn auth_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Authentication(msg.into()))
}

/// Where credentials come from.
enum Source {
    /// The default chain, built on first use (building it is async).
    DefaultChain(tokio::sync::OnceCell<SharedCredentialsProvider>),
    /// A given provider.
    Provider(SharedCredentialsProvider),
}

/// OAUTHBEARER tokens for AWS MSK IAM. `Debug` and [`describe`](TokenProvider::describe)
/// name the region only, never credentials.
pub struct MskIamTokenProvider {
    region: String,
    source: Source,
    cache: TokenCache,
}

impl fmt::Debug for MskIamTokenProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MskIamTokenProvider")
            .field("region", &self.region)
            .field(
                "credentials",
                &match self.source {
                    Source::DefaultChain(_) => "default chain",
                    Source::Provider(_) => "provider",
                },
            )
            .finish()
    }
}

impl MskIamTokenProvider {
    /// Tokens for the cluster's `region` (such as `eu-west-1`), signed with credentials
    /// from the AWS SDK's default chain. Nothing is read until the first token is needed.
    pub fn new(region: impl Into<String>) -> Self {
        Self::with_source(region.into(), Source::DefaultChain(Default::default()))
    }

    /// Tokens for `region` signed with credentials from `provider` (static test
    /// credentials, an assumed role, …).
    pub fn from_credentials_provider(
        region: impl Into<String>,
        provider: impl ProvideCredentials + 'static,
    ) -> Self {
        Self::with_source(
            region.into(),
            Source::Provider(SharedCredentialsProvider::new(provider)),
        )
    }

    fn with_source(region: String, source: Source) -> Self {
        MskIamTokenProvider {
            region,
            source,
            cache: TokenCache::new(Duration::ZERO),
        }
    }

    async fn provider(&self) -> &SharedCredentialsProvider {
        match &self.source {
            Source::Provider(p) => p,
            Source::DefaultChain(cell) => {
                cell.get_or_init(|| async {
                    SharedCredentialsProvider::new(
                        DefaultCredentialsChain::builder()
                            .region(Region::new(self.region.clone()))
                            .build()
                            .await,
                    )
                })
                .await
            }
        }
    }

    async fn fetch(&self) -> Result<Token> {
        let provider = self.provider().await;
        let creds = tokio::time::timeout(CREDENTIALS_TIMEOUT, provider.provide_credentials())
            .await
            .map_err(|_| {
                auth_err(format!(
                    "no AWS credentials found for MSK IAM (region {}): loading them took \
                     more than {}s",
                    self.region,
                    CREDENTIALS_TIMEOUT.as_secs()
                ))
            })?
            .map_err(|e| credentials_err(&self.region, &e))?;
        let creds_expiry = creds.expiry();
        let (token, expiration_ms) =
            aws_msk_iam_sasl_signer::generate_auth_token_from_credentials_provider(
                Region::new(self.region.clone()),
                SharedCredentialsProvider::new(creds),
            )
            .await
            .map_err(|e| {
                // The signer's errors name what failed (URL, signing parameters), never
                // the key.
                auth_err(format!(
                    "cannot sign the AWS MSK IAM token (region {}): {}",
                    self.region,
                    chain(&e)
                ))
            })?;
        let signed_until = u64::try_from(expiration_ms)
            .ok()
            .map(|ms| UNIX_EPOCH + Duration::from_millis(ms));
        // A token signed with temporary credentials is worthless once they expire.
        let expires_at = match (signed_until, creds_expiry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(Token {
            value: Secret::new(token),
            expires_at,
            principal: None,
        })
    }
}

/// `e` and its sources, `: `-separated (the SDK's top-level messages are terse).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let c = cause.to_string();
        if !s.ends_with(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        next = cause.source();
    }
    s
}

fn credentials_err(region: &str, e: &CredentialsError) -> Error {
    let why = chain(e);
    match e {
        CredentialsError::CredentialsNotLoaded(_) => auth_err(format!(
            "no AWS credentials found for MSK IAM (region {region}): {why}; the default chain \
             looks at AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE and ~/.aws, \
             AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN (IRSA), the ECS container endpoint \
             and the EC2 instance metadata service"
        )),
        _ => auth_err(format!(
            "cannot load AWS credentials for MSK IAM (region {region}): {why}"
        )),
    }
}

impl TokenProvider for MskIamTokenProvider {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(self.cache.get(|| self.fetch()))
    }

    fn describe(&self) -> String {
        format!("AWS MSK IAM (region {})", self.region)
    }
}

#[cfg(test)]
mod tests {
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
            url.starts_with(
                "https://kafka.eu-west-1.amazonaws.com/?Action=kafka-cluster%3AConnect&"
            ),
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
            !url.contains(
                &form_urlencoded::byte_serialize(SECRET_KEY.as_bytes()).collect::<String>()
            ),
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
        let url =
            String::from_utf8(B64URL.decode(token.value.expose()).expect("b64")).expect("utf-8");
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
}
