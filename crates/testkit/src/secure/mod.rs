//! TLS, SASL and OAuth servers for client security tests: [`TestPki`], [`SecureFront`],
//! [`SecureBroker`] and [`TokenEndpoint`].
//!
//! Tansu's own TLS and SASL are unusable (docs/compatibility.md, "Security"), so the
//! server side is built here from implementations that share nothing
//! with Strait's client: Python's `ssl` module (OpenSSL) for TLS, the `scramp` package for
//! SCRAM, `cryptography` for certificates. Each is proven with librdkafka (confluent-kafka)
//! in `tests/secure.rs` before Strait's own client is tested against it.
//!
//! | piece | script | what it implements |
//! |---|---|---|
//! | [`TestPki`] | `py/test_pki.py` | a CA, server/client certs (EC P-256 and RSA-2048 keys, PKCS#8 plus SEC1 and PKCS#1 copies), an expired server cert, a wrong-host cert, a second unrelated CA with its own server and client certs |
//! | [`SecureFront`] | `py/secure_front.py` | a TCP front end for one Tansu broker: TLS 1.2/1.3 (optionally mutual), SASL PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (KIP-152 framing: SaslHandshake v1, SaslAuthenticate v0-v2), KIP-368 re-authentication, one JSON event line per connection step |
//! | [`SecureBroker`] | - | a Tansu broker that **advertises the front end's port**, so every connection a client opens after Metadata goes through the front end too |
//! | [`TokenEndpoint`] | `py/token_endpoint.py` | an HTTPS OAuth 2.0 token endpoint for the client-credentials grant (RFC 6749 section 4.4, KIP-768) issuing HS256 JWTs the front end validates; also mints tokens into files |
//!
//! ```no_run
//! # fn main() -> strait_testkit::Result<()> {
//! use strait_testkit::rdkafka::{self, ClientConfig};
//! use strait_testkit::secure::{FrontOptions, SaslMechanism, SaslOptions, SecureBroker, TestPki};
//!
//! let pki = TestPki::generate_temp()?;
//! let sasl = SaslOptions::new(&[SaslMechanism::ScramSha512]).user("alice", "alice-secret");
//! let secure = SecureBroker::start(FrontOptions::sasl_ssl(&pki, sasl))?;
//! let client = ClientConfig::new()
//!     .set("security.protocol", "SASL_SSL")
//!     .set("ssl.ca.location", pki.ca_cert.to_string_lossy())
//!     .set("sasl.mechanism", "SCRAM-SHA-512")
//!     .set("sasl.username", "alice")
//!     .set("sasl.password", "alice-secret");
//! rdkafka::create_topic_with(&secure.bootstrap(), "t", 1, &[], &client)?;
//! assert_eq!(secure.front.count("auth_ok"), 1);
//! # Ok(()) }
//! ```
//!
//! # The front end
//!
//! Without SASL it relays bytes (after the TLS handshake, if TLS is on). With SASL it reads
//! Kafka request frames. Before authentication it forwards ApiVersions to Tansu and makes
//! sure the response advertises SaslHandshake v0-1 and SaslAuthenticate v0-2 (Tansu 0.6
//! already does), answers SaslHandshake and SaslAuthenticate itself, and closes the
//! connection on any other request. After success every frame is forwarded byte for byte
//! in both directions (post-authentication ApiVersions is not rewritten). SaslHandshake and
//! SaslAuthenticate on an authenticated connection are a KIP-368 re-authentication: they
//! are answered after every earlier request on the connection has been answered, so
//! responses stay in request order (Produce with `acks=0` expects no response and is not
//! waited for). With a session lifetime, SaslAuthenticate v1+ responses carry
//! `session_lifetime_ms`; for OAUTHBEARER it is capped at the token's remaining lifetime,
//! as Kafka does. A connection whose session expired is closed on its next non-SASL
//! request (event `session_expired`), as Kafka's broker does.
//!
//! * Wrong password, unknown user, bad or expired token: SaslAuthenticate answers
//!   error 58 (SASL_AUTHENTICATION_FAILED) with an error message, then the connection is
//!   closed. For OAUTHBEARER the response's auth bytes carry the RFC 7628 error JSON
//!   `{"status":"invalid_token"}`.
//! * A mechanism that is not enabled: SaslHandshake answers 33 (UNSUPPORTED_SASL_MECHANISM)
//!   with the enabled list, then closes.
//! * Re-authentication must keep the mechanism and the principal (else error 58 and close).
//! * OAUTHBEARER tokens must be HS256 JWTs signed with the shared secret
//!   ([`TokenEndpoint::secret`]), with a non-empty `sub` (the principal) and an `exp` in
//!   the future. SASL extensions are accepted and ignored. `alg: none` (librdkafka's
//!   built-in unsecured tokens) is refused.
//! * SCRAM: 4096 iterations, no channel binding (`n,,`), saslname `=2C`/`=3D` decoded.
//!
//! ## How it differs from a real Kafka broker
//!
//! * **No authorization**: there are no ACLs; every authenticated principal may do
//!   everything Tansu allows. The principal is not passed on to Tansu.
//! * SaslHandshake v0 (raw SASL tokens outside Kafka framing) is refused; librdkafka and
//!   Java clients use v1 when the broker advertises it.
//! * OAUTHBEARER failure: Kafka first answers the client's token with the error JSON as a
//!   *challenge* (error code 0), waits for the client's `%x01` and then fails with 58. The
//!   front end answers 58 with the JSON at once (both are valid RFC 7628 outcomes from the
//!   client's point of view: authentication fails).
//! * No `connections.max.reauth.ms` negotiation beyond the fixed lifetime; no delegation
//!   tokens, no SCRAM `tokenauth` extension, no GSSAPI.
//! * The TLS principal (client certificate subject) is only reported in the `tls_ok` event.
//!
//! ## Event lines
//!
//! One JSON object per line in [`SecureFront::events_path`]:
//! `{"ts": unix-seconds, "event": NAME, "conn": N, ...}`. Names and their extra fields:
//! `listening` (port, tls, mutual_tls, sasl, session_lifetime_ms), `upstream` (upstream),
//! `accepted` (peer), `tls_ok` (version, cipher, client_subject), `tls_failed` (error),
//! `auth_ok` / `reauth_ok` (mechanism, user, session_lifetime_ms, api_version),
//! `auth_failed` / `reauth_failed` (mechanism, user, reason), `refused` (api_key,
//! api_version: a request before authentication), `session_expired` (mechanism, user,
//! api_key), `closed` (reason). Parsed by [`SecureFront::events`] into [`FrontEvent`].
//!
//! # The token endpoint
//!
//! POST (any path; [`TokenEndpoint::url`] ends in `/token`) with form
//! `grant_type=client_credentials` and an optional `scope`; client authentication by HTTP
//! Basic or by form `client_id`/`client_secret`. Answers
//! `{"access_token", "token_type": "bearer", "expires_in", "scope"}`; the JWT carries `sub`
//! (the client id), `iat`, `exp`, `iss` and `scope`. Wrong secret or unknown client: 401
//! `{"error":"invalid_client"}`; another grant type: 400 `unsupported_grant_type`. It does
//! not implement refresh tokens, JWKS, or any other grant.
//!
//! # librdkafka notes (2.16)
//!
//! * OIDC (`sasl.oauthbearer.method=oidc`): librdkafka fetches the token with its own
//!   HTTPS client (libcurl); the endpoint's CA is given by `https.ca.location` (the
//!   `ssl.ca.location` of the Kafka connection is not used for it). librdkafka does not
//!   verify the JWT's signature; it reads `exp` and `sub` from it.
//! * librdkafka re-authenticates (KIP-368) ahead of `session_lifetime_ms` on each
//!   connection; a connection that does not is closed at its next request after expiry
//!   (event `session_expired`), after which librdkafka reconnects.
//! * A refused connection is retried forever by default: tests use
//!   [`rdkafka::check_connect`](crate::rdkafka::check_connect), which stops at the first
//!   `_AUTHENTICATION` / `_SSL` / `_ALL_BROKERS_DOWN` error librdkafka reports (within a
//!   second here).
//! * librdkafka **forgets the bootstrap address** once Metadata has named the brokers
//!   (the `.../bootstrap` broker is decommissioned), so a front end in front of a broker
//!   that advertises itself only works for the first request: use [`SecureBroker`].
//! * Its TLS error text is the same for an untrusted CA, an expired certificate and a
//!   wrong host name ("certificate verify failed: broker certificate could not be
//!   verified"). The alert it sends does say which; the front end logs it in
//!   `tls_failed`: `UNKNOWN_CA`, `CERTIFICATE_EXPIRED`, `BAD_CERTIFICATE` (wrong host).
//! * Host names are checked by default (`ssl.endpoint.identification.algorithm=https`);
//!   `127.0.0.1` matches the IP SAN of the server cert.
//! * Mutual TLS refusal over TLS 1.3: the server's alert arrives after the client
//!   considers the handshake done, so librdkafka reports no `_SSL` error, only
//!   `_ALL_BROKERS_DOWN`; the front end logs `PEER_DID_NOT_RETURN_A_CERTIFICATE` or
//!   `CERTIFICATE_VERIFY_FAILED`.
//! * It reads RSA PKCS#1, RSA PKCS#8, EC SEC1 and EC PKCS#8 client keys alike.
//! * SaslAuthenticate: librdkafka 2.16 uses v1 (so it gets `session_lifetime_ms`).
//! * With an `oauth_cb` (the token-file mode of the helper), librdkafka will not set a
//!   token whose expiry has passed, and the client constructor then fails after 10 s
//!   ("OAuth token not set within 10 seconds timeout"): the helper reports at least a
//!   minute of lifetime so an expired token reaches the front end, which refuses it.
//! * A wrong OIDC client secret: the endpoint answers 401 and librdkafka reports
//!   `_AUTHENTICATION: Failed to acquire SASL OAUTHBEARER token: {"error":
//!   "invalid_client"}`; it never offers the front end a token (no `auth_failed` there).
//! * Re-authentication seen in `tests/secure.rs` (2.5 s sessions, ~8 s of traffic on one
//!   producer and one consumer): 11 re-authentications over 7 connections, no session
//!   expiry closes, nothing lost.

mod front;
mod pki;
mod py_server;
mod token;

pub use front::{
    FrontEvent, FrontOptions, SaslMechanism, SaslOptions, SecureBroker, SecureFront, TlsOptions,
    TlsVersion,
};
pub use pki::TestPki;
pub use token::{TokenEndpoint, TokenEndpointOptions};
