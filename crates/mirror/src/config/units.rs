//! Human-friendly units in the config file: durations (`"30s"`, `"5m"`) and byte sizes
//! (`"64MiB"` or a plain integer number of bytes).

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A duration written as a humantime string such as `"500ms"`, `"30s"` or `"5m"`.
///
/// Bounds (zero, "absurd") are checked by validation, not here, so that every problem in a
/// file is reported together with its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct HumanDuration(pub Duration);

impl HumanDuration {
    /// A duration of `secs` seconds.
    pub const fn secs(secs: u64) -> Self {
        Self(Duration::from_secs(secs))
    }

    /// A duration of `ms` milliseconds.
    pub const fn millis(ms: u64) -> Self {
        Self(Duration::from_millis(ms))
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration string such as \"500ms\", \"30s\" or \"5m\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HumanDuration, E> {
                humantime::parse_duration(v.trim())
                    .map(HumanDuration)
                    .map_err(|e| {
                        E::custom(format_args!(
                            "invalid duration \"{v}\" ({e}); expected a duration string such as \"500ms\", \"30s\" or \"5m\""
                        ))
                    })
            }
        }
        d.deserialize_str(V)
    }
}

/// A number of bytes, written as an integer or as a string with a unit:
/// `"512KiB"`, `"64MiB"`, `"1GiB"` (powers of 1024) or `"64MB"` (powers of 1000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

const UNITS: &[(&str, u64)] = &[
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("KB", 1_000),
    ("B", 1),
];

impl ByteSize {
    /// `n` mebibytes.
    pub const fn mib(n: u64) -> Self {
        Self(n << 20)
    }

    /// Parses `"64MiB"`, `"1 GiB"`, `"1000"` and the like.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (number, multiplier) = UNITS
            .iter()
            .find_map(|(unit, m)| text.strip_suffix(unit).map(|n| (n.trim_end(), *m)))
            .unwrap_or((text, 1));
        number
            .parse::<u64>()
            .ok()?
            .checked_mul(multiplier)
            .map(Self)
    }
}

impl fmt::Display for ByteSize {
    /// The largest binary unit that divides the value exactly, so `Display` parses back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, m) in &UNITS[..3] {
            if self.0 >= *m && self.0.is_multiple_of(*m) {
                return write!(f, "{}{unit}", self.0 / m);
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a byte size: an integer, or a string such as \"64MiB\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom("a byte size cannot be negative"))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ByteSize, E> {
                ByteSize::parse(v).ok_or_else(|| {
                    E::custom(format_args!(
                        "invalid byte size \"{v}\"; expected an integer or a string such as \"512KiB\", \"64MiB\", \"1GiB\""
                    ))
                })
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests;
