//! strait-mirror: the replication engine.
//!
//! Today this crate holds the engine's configuration; the data path, topic sync and group
//! sync will be built on top of it.
//!
//! Layout:
//! - [`config`]: the TOML config file: model, loading with env substitution, validation
//!   into resolved types ([`config::Config`], [`config::Flow`], …), the replication
//!   (naming) policy, and the MirrorMaker 2 importer ([`config::mm2`]).

pub mod config;
