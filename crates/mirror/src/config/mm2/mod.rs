//! MirrorMaker 2 compatibility: read an `mm2.properties` file and write the equivalent
//! Strait TOML, listing every key that could not be carried over and why.

pub mod import;
pub mod properties;

pub use import::{
    ImportError, ImportOptions, MirrorMaker1, UnmappedKey, import_mm2, import_mm2_with,
};
