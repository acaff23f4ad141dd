use super::*;

#[test]
fn per_gib_figures() {
    let r = ReplicationReport::new(
        1000,
        512 << 20,
        1 << 30,
        2.0,
        Some(1024.0),
        Cpu {
            user_secs: 1.0,
            sys_secs: 0.5,
        },
        Cpu {
            user_secs: 2.0,
            sys_secs: 1.0,
        },
        Cpu::default(),
    );
    assert!((r.cpu_secs_per_gib_batches - 3.0).abs() < 1e-9);
    assert!((r.cpu_secs_per_gib_values - 1.5).abs() < 1e-9);
    assert!((r.mib_per_sec - 512.0).abs() < 1e-9);
    assert!((r.vs_load.unwrap_or(0.0) - 0.5).abs() < 1e-9);
    let b = r
        .with_batches(1000, 250, 50, 20)
        .per_batch
        .expect("per batch");
    assert_eq!(b.fetch_requests, 20);
    // 1.5 s of engine CPU.
    assert!((b.cpu_us_per_source_batch - 1500.0).abs() < 1e-6);
    assert!((b.cpu_us_per_produced_batch - 6000.0).abs() < 1e-6);
    assert!((b.cpu_us_per_request - 30000.0).abs() < 1e-6);
    assert_eq!(PerBatch::new(1.0, 0, 0, 0, 0).cpu_us_per_request, 0.0);
    let cpu = |s| Cpu {
        user_secs: s,
        sys_secs: 0.5,
    };
    let brokers = BrokerCpu::new(cpu(1.0), cpu(1.5), 400);
    assert!((brokers.target_us_per_produce_request - 5000.0).abs() < 1e-6);
    assert_eq!(
        BrokerCpu::new(cpu(1.0), cpu(1.0), 0).target_us_per_produce_request,
        0.0
    );
}
