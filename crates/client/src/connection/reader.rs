//! The reader task: reads whole frames off the read half and hands each to the request at
//! the front of the pending queue (Kafka answers in the order sent), checking the
//! correlation id; a mismatch, an unsolicited answer or a read error poisons the connection.

use std::sync::Arc;

use tokio::io::AsyncRead;

use super::{Pending, Shared, closed_err};
use crate::error::Error;
use crate::frame::{self, FrameReader};

pub(super) async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: FrameReader<R>,
    shared: Arc<Shared>,
) {
    let err = loop {
        let frame = match reader.read_frame().await {
            Ok(Some(f)) => f,
            Ok(None) => break closed_err().message("broker closed the connection"),
            Err(e) => break e,
        };
        let corr = match frame::peek_correlation_id(&frame) {
            Ok(c) => c,
            Err(e) => break e,
        };
        let p = {
            let mut st = shared.state.lock();
            // Requests Kafka never answers (acks=0) that precede this response were not
            // answered: drop them.
            while st
                .pending
                .front()
                .is_some_and(|p| p.tx.is_none() && p.correlation_id != corr)
            {
                st.pending.pop_front();
            }
            match st.pending.front() {
                Some(p) if p.correlation_id == corr => st.pending.pop_front(),
                Some(p) => {
                    let want = p.correlation_id;
                    drop(st);
                    break Error::protocol(format!(
                        "response correlation id {corr}, expected {want}"
                    ));
                }
                None => {
                    drop(st);
                    break Error::protocol(format!("unsolicited response (correlation id {corr})"));
                }
            }
        };
        if let Some(Pending {
            tx: Some(tx),
            api,
            version,
            ..
        }) = p
        {
            let body = frame::strip_response_header(api, version, frame);
            // The caller may have gone away (cancelled); that is fine.
            let _ = tx.send(body);
        }
    };
    shared.poison(err.broker(shared.broker_id));
}
