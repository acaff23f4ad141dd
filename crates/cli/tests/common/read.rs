//! What the brokers and the state topic hold, read the way `strait` reads them: the
//! partitions' ends from Fetch, and the offset maps a restart would load.

use std::path::Path;

use strait_client::{Client, ClientConfig, IsolationLevel};
use strait_mirror::datapath::probe::bounds;
use strait_offsets::Registry;

/// A current-thread runtime for the async clients these tests read with.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Per partition `0..partitions`, the high watermark (read_uncommitted) or the last stable
/// offset (read_committed, what strait fetches up to), from Fetch; `None` while the topic
/// does not exist.
pub fn partition_ends(
    rt: &tokio::runtime::Runtime,
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    isolation: IsolationLevel,
) -> Option<Vec<i64>> {
    rt.block_on(async {
        let client = Client::connect(ClientConfig::new([bootstrap])).await.ok()?;
        let partitions: Vec<i32> = (0..partitions).collect();
        let b = bounds(&client, topic, &partitions, isolation).await.ok()?;
        Some(
            partitions
                .iter()
                .map(|p| b.get(p).map_or(0, |b| b.end))
                .collect(),
        )
    })
}

/// The offset maps of the first flow of the config at `cfg`, read from the state topic on
/// the target `dst` as `strait` reads them on start.
pub fn saved_maps(rt: &tokio::runtime::Runtime, cfg: &Path, dst: &str) -> Registry {
    let config = strait_mirror::config::load(cfg).expect("config");
    let flow = config.flows[0].clone();
    rt.block_on(async {
        let client = Client::connect(ClientConfig::new([dst]))
            .await
            .expect("connect");
        strait_mirror::state::load_maps(&client, &flow)
            .await
            .expect("load maps")
    })
}
