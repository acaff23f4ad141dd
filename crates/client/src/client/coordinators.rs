//! The coordinator and controller calls of [`Client`]: FindCoordinator and its cache,
//! calls sent to a group or transaction coordinator, and admin calls sent to the controller.

use std::time::Duration;

use kafka_protocol::messages::FindCoordinatorRequest;
use kafka_protocol::protocol::StrBytes;

use super::{Client, CoordinatorType};
use crate::broker::Purpose;
use crate::error::{Error, ErrorKind, Result};
use crate::frame::Request;

impl Client {
    /// The coordinator for a group or transactional id (FindCoordinator, cached until a
    /// coordinator error).
    pub async fn find_coordinator(&self, kind: CoordinatorType, key: &str) -> Result<i32> {
        let ck = (kind, key.to_string());
        if let Some(&id) = self.inner.coordinators.lock().get(&ck) {
            return Ok(id);
        }
        let id = self
            .with_retries("find_coordinator", || async {
                let build = |v: i16| {
                    let mut r = FindCoordinatorRequest::default()
                        .with_key(StrBytes::from_string(key.to_string()));
                    if v >= 1 {
                        r.key_type = match kind {
                            CoordinatorType::Group => 0,
                            CoordinatorType::Transaction => 1,
                        };
                    } else if kind == CoordinatorType::Transaction {
                        return Err(Error::invalid("transactions need FindCoordinator v1+"));
                    }
                    Ok(r)
                };
                let (_, v, r) = self.send_any(build).await?;
                let _ = v;
                Error::check_code(r.error_code, r.error_message.as_deref())
                    .map_err(|e| e.api(kafka_protocol::messages::ApiKey::FindCoordinator))?;
                // The coordinator may not be in our broker list yet.
                if !self.cached_metadata().brokers.contains_key(&r.node_id.0) {
                    self.refresh_metadata().await?;
                }
                Ok(r.node_id.0)
            })
            .await?;
        self.inner.coordinators.lock().insert(ck, id);
        Ok(id)
    }

    /// Forgets a cached coordinator (after NOT_COORDINATOR and friends).
    pub(crate) fn forget_coordinator(&self, kind: CoordinatorType, key: &str) {
        self.inner
            .coordinators
            .lock()
            .remove(&(kind, key.to_string()));
    }

    /// Sends to the coordinator of `key`, retrying (and re-discovering the coordinator) on
    /// retriable errors. `check` turns an `Ok` response with an error code into an `Err`.
    pub(crate) async fn send_to_coordinator<R, F, C>(
        &self,
        kind: CoordinatorType,
        key: &str,
        extra_timeout: Duration,
        build: F,
        check: C,
    ) -> Result<R::Response>
    where
        R: Request,
        F: Fn(i16) -> Result<R>,
        C: Fn(&R::Response) -> Result<()>,
    {
        self.with_retries("coordinator call", || async {
            let id = self.find_coordinator(kind, key).await?;
            let b = self.broker(id)?;
            let res = self
                .send_built(
                    &b,
                    Purpose::Control,
                    b.request_timeout() + extra_timeout,
                    &build,
                )
                .await
                .and_then(|(_, r)| check(&r).map(|_| r));
            if let Err(e) = &res
                && (e.is_coordinator_error() || e.is_network())
            {
                self.forget_coordinator(kind, key);
            }
            res.map_err(|e| e.broker(id))
        })
        .await
    }

    /// Sends to the controller (admin calls such as CreateTopics).
    pub(crate) async fn send_to_controller<R, F>(&self, build: F) -> Result<R::Response>
    where
        R: Request,
        F: Fn(i16) -> Result<R>,
    {
        self.refresh_if_stale().await?;
        let meta = self.cached_metadata();
        let b = if meta.controller_id >= 0 {
            self.broker(meta.controller_id)?
        } else {
            self.any_brokers()
                .into_iter()
                .next()
                .ok_or_else(|| Error::new(ErrorKind::NoBrokerAvailable))?
        };
        let (_, r) = self
            .send_built(&b, Purpose::Control, b.request_timeout(), build)
            .await?;
        Ok(r)
    }
}
