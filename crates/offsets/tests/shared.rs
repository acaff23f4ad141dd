//! One writer and many readers per partition, through the registry.

use std::sync::Arc;
use std::thread;

use strait_offsets::{OffsetMap, Registry, RegistryError, Translation};

#[test]
fn registry_hands_out_one_writer() {
    let registry = Registry::new();
    let _writer = registry.register("orders", 0, OffsetMap::new()).unwrap();
    assert!(matches!(
        registry.register("orders", 0, OffsetMap::new()),
        Err(RegistryError::AlreadyRegistered { partition: 0, .. })
    ));
    registry.register("orders", 1, OffsetMap::new()).unwrap();
    assert!(registry.reader("orders", 2).is_none());
    assert!(registry.reader("payments", 0).is_none());
    assert_eq!(
        registry.partitions(),
        [("orders".to_owned(), 0), ("orders".to_owned(), 1)]
    );
    assert!(registry.remove("orders", 0));
    assert!(!registry.remove("orders", 0));
    assert!(registry.reader("orders", 0).is_none());
}

/// Readers never observe a translation past what the writer had appended, and every
/// answer they see is consistent with the final map.
#[test]
fn readers_run_while_the_writer_appends() {
    let registry = Arc::new(Registry::new());
    let mut writer = registry
        .register("t", 0, OffsetMap::with_budget(64))
        .unwrap();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let reader = registry.reader("t", 0).unwrap();
            thread::spawn(move || {
                let mut seen = 0;
                for round in 0..20_000u64 {
                    match reader.translate(round % 3_000) {
                        // Source offset 11k+j (j<10) lands at 10k+j: never past that.
                        Translation::Mapped { offset, .. } => {
                            let c = round % 3_000;
                            let truth = c / 11 * 10 + (c % 11).min(10);
                            assert!(offset <= truth, "{c}: {offset} > {truth}");
                            seen += 1;
                        }
                        Translation::NotYetReplicated { .. } => {}
                        other => panic!("{other:?}"),
                    }
                }
                seen
            })
        })
        .collect();
    for i in 0..300u64 {
        writer.append_dense(i * 11, 10, i * 10).unwrap();
        if i % 50 == 0 {
            writer.take_checkpoint();
        }
    }
    let snapshot = writer.snapshot();
    for reader in readers {
        assert!(reader.join().unwrap() > 0);
    }
    let restored = OffsetMap::from_snapshot(&snapshot.bytes, 64).unwrap();
    assert_eq!(writer.read(|map| map.clone()), restored);
    writer.update(|map| map.set_source_log_start(100)).unwrap();
    let reader = registry.reader("t", 0).unwrap();
    assert!(matches!(
        reader.translate(50),
        Translation::Truncated { .. }
    ));
    assert_eq!(reader.stats().source_next, 3_299);
}

/// `MapWriter::heap_bytes`: the shared allocation (at least the map itself) plus what the
/// entries and journal allocated; a dense partition stays small, gaps add runs.
#[test]
fn heap_bytes_counts_the_shared_map_and_its_entries() {
    let mut writer = strait_offsets::MapWriter::new(OffsetMap::new());
    let fixed = |w: &strait_offsets::MapWriter| w.heap_bytes() - w.read(|m| m.stats().heap_bytes);
    let empty_fixed = fixed(&writer);
    assert!(
        empty_fixed >= std::mem::size_of::<OffsetMap>(),
        "{empty_fixed}"
    );
    for i in 0..1_000u64 {
        writer.append_dense(i * 10, 10, i * 10).unwrap();
    }
    assert_eq!(writer.read(|m| m.stats().runs), 1);
    assert_eq!(fixed(&writer), empty_fixed, "the fixed part does not move");
    let dense = writer.heap_bytes();
    // A gap after every batch: one run per batch.
    for i in 0..1_000u64 {
        writer
            .append_dense(20_000 + i * 11, 10, 10_000 + i * 10)
            .unwrap();
    }
    let runs = writer.read(|m| m.stats().runs);
    assert!(runs > 500, "{runs}");
    assert!(
        writer.heap_bytes() >= dense + (runs - 1) * 16,
        "runs take heap"
    );
}
