//! Kafka framing for the fault proxy: which frames [`FaultProxy::corrupt_frames`]
//! damages ([`FrameCorruption`], [`FrameCursor`]) and the client id of a connection's first
//! request (for [`FaultProxy::exempt_client_id`]).
//!
//! [`FaultProxy::corrupt_frames`]: super::FaultProxy::corrupt_frames
//! [`FaultProxy::exempt_client_id`]: super::FaultProxy::exempt_client_id

/// Which Kafka frames [`FaultProxy::corrupt_frames`](super::FaultProxy::corrupt_frames) damages, and where.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FrameCorruption {
    /// How many frames to damage (the next ones that qualify); 0 = none.
    pub frames: u32,
    /// Only frames whose length (the 4-byte prefix, not counted) is at least this.
    pub min_len: u32,
    /// The damage starts this many bytes before the frame's end.
    pub from_end: u32,
    /// Bytes bit-flipped (`b ^ 0xFF`), at most up to the frame's end.
    pub len: u32,
}

/// The client id of the Kafka request starting `head` (length prefix, api key, version,
/// correlation id, then an INT16-length string), once enough bytes are there; a null id
/// is empty.
pub(super) fn client_id(head: &[u8]) -> Option<&[u8]> {
    let len = i16::from_be_bytes(head.get(12..14)?.try_into().ok()?);
    if len < 0 {
        return Some(&[]);
    }
    head.get(14..14 + len as usize)
}

/// Follows the Kafka frames (4-byte big-endian length prefix, then the body) of one
/// direction of one connection, for [`crate::FaultProxy::corrupt_frames`].
#[derive(Debug, Default)]
pub(super) struct FrameCursor {
    prefix: [u8; 4],
    /// Prefix bytes seen of the current frame (4: in the body).
    have: usize,
    /// The current frame's body length and the position in it.
    len: u64,
    pos: u64,
    /// Body range `[from, to)` to bit-flip in the current frame.
    flip: Option<(u64, u64)>,
}

impl FrameCursor {
    /// Walks `chunk`, damaging the frames `spec` asks for; returns how many frames
    /// started being damaged.
    pub(super) fn apply(&mut self, chunk: &mut [u8], spec: &mut FrameCorruption) -> u64 {
        let mut hit = 0;
        let mut i = 0;
        while i < chunk.len() {
            if self.have < 4 {
                self.prefix[self.have] = chunk[i];
                self.have += 1;
                i += 1;
                if self.have == 4 {
                    self.len = u64::from(u32::from_be_bytes(self.prefix));
                    self.pos = 0;
                    self.flip = None;
                    let (min, back) = (u64::from(spec.min_len), u64::from(spec.from_end));
                    if spec.frames > 0 && self.len >= min && self.len >= back && spec.len > 0 {
                        let from = self.len - back;
                        self.flip = Some((from, (from + u64::from(spec.len)).min(self.len)));
                        spec.frames -= 1;
                        hit += 1;
                    }
                    if self.len == 0 {
                        self.have = 0;
                    }
                }
                continue;
            }
            let take = ((chunk.len() - i) as u64).min(self.len - self.pos);
            if let Some((from, to)) = self.flip {
                for at in from.max(self.pos)..to.min(self.pos + take) {
                    chunk[i + (at - self.pos) as usize] ^= 0xFF;
                }
            }
            self.pos += take;
            i += take as usize;
            if self.pos == self.len {
                self.have = 0;
            }
        }
        hit
    }
}
