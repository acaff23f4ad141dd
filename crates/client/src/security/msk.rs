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
mod tests;
