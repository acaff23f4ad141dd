//! The writer task: drains the queue, registers each frame's response slot before writing
//! it, and writes the frames with vectored I/O from the callers' `Bytes`; a write error
//! poisons the connection and whatever is still queued fails.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::Arc;

use bytes::{Buf, Bytes};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use super::{Outgoing, Pending, Shared, closed_err};
use crate::error::{Error, Result};

/// How many queued frames the writer coalesces into one vectored write loop.
const MAX_COALESCE: usize = 64;

pub(super) async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::Receiver<Outgoing>,
    shared: Arc<Shared>,
) {
    let mut batch: Vec<Outgoing> = Vec::with_capacity(MAX_COALESCE);
    // Reused for every write (no allocation per request).
    let mut parts: VecDeque<Bytes> = VecDeque::new();
    let mut written = Vec::with_capacity(MAX_COALESCE);
    loop {
        let first = tokio::select! {
            biased;
            _ = shared.stop_writer.notified() => break,
            m = rx.recv() => match m { Some(m) => m, None => break },
        };
        batch.push(first);
        while batch.len() < MAX_COALESCE {
            match rx.try_recv() {
                Ok(m) => batch.push(m),
                Err(_) => break,
            }
        }
        if !register(&shared, &mut batch, &mut parts, &mut written) {
            break;
        }
        let res = write_parts(&mut wr, &mut parts).await;
        match res {
            Ok(()) => {
                for w in written.drain(..) {
                    let _ = w.send(Ok(()));
                }
            }
            Err(e) => {
                let e = Error::from(e).broker(shared.broker_id);
                for w in written.drain(..) {
                    let _ = w.send(Err(e.clone()));
                }
                shared.poison(e);
                break;
            }
        }
    }
    // Fail whatever is still queued; new sends fail because the receiver is closed.
    rx.close();
    let e = shared.closed().unwrap_or_else(closed_err);
    while let Ok(m) = rx.try_recv() {
        batch.push(m);
    }
    fail_all(&mut batch, &e);
    let _ = wr.shutdown().await;
}

/// Takes `batch` for one write: its frames' parts into `parts`, its response slots onto
/// the pending queue, its written-signals into `written`. Responses are registered before
/// writing so the reader can never see an answer to a request it does not know about.
/// `false` when the connection is closed (the batch has then failed).
fn register(
    shared: &Shared,
    batch: &mut Vec<Outgoing>,
    parts: &mut VecDeque<Bytes>,
    written: &mut Vec<oneshot::Sender<Result<()>>>,
) -> bool {
    parts.clear();
    let mut st = shared.state.lock();
    if let Some(e) = st.closed.clone() {
        drop(st);
        fail_all(batch, &e);
        return false;
    }
    for m in batch.drain(..) {
        parts.extend(m.frame.parts);
        if let Some(p) = m.pending {
            st.pending.push_back(p);
        }
        written.extend(m.written);
    }
    true
}

fn fail_all(batch: &mut Vec<Outgoing>, e: &Error) {
    for m in batch.drain(..) {
        if let Some(Pending {
            tx: Some(tx), api, ..
        }) = m.pending
        {
            let _ = tx.send(Err(e.clone().api(api)));
        }
        if let Some(w) = m.written {
            let _ = w.send(Err(e.clone()));
        }
    }
}

/// Writes every part with vectored writes, then flushes.
async fn write_parts<W: AsyncWrite + Unpin>(
    wr: &mut W,
    parts: &mut VecDeque<Bytes>,
) -> std::io::Result<()> {
    const MAX_SLICES: usize = 64;
    while !parts.is_empty() {
        let n = {
            // On the stack: no allocation per write.
            let mut slices = [IoSlice::new(&[]); MAX_SLICES];
            let mut k = 0;
            for (s, b) in slices.iter_mut().zip(parts.iter()) {
                *s = IoSlice::new(b);
                k += 1;
            }
            wr.write_vectored(&slices[..k]).await?
        };
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        let mut left = n;
        while left > 0 {
            let Some(front) = parts.front_mut() else {
                break;
            };
            if front.len() <= left {
                left -= front.len();
                parts.pop_front();
            } else {
                front.advance(left);
                left = 0;
            }
        }
        while parts.front().is_some_and(Bytes::is_empty) {
            parts.pop_front();
        }
    }
    wr.flush().await
}
