use super::*;

#[test]
fn proc_stat_cpu_is_read_past_an_odd_command_name() {
    let stat = "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194304 120 0 0 0 250 37 0 0 20 0 \
                    9 0 1000 123456 789 18446744073709551615";
    assert_eq!(
        parse_stat_cpu(stat, 10_000),
        Some(CpuSnapshot {
            user_us: 2_500_000,
            sys_us: 370_000
        })
    );
    assert_eq!(parse_stat_cpu("4242 (x) S 1 2", 10_000), None, "truncated");
    assert_eq!(parse_stat_cpu("garbage", 10_000), None);
    let me = process_cpu(std::process::id()).expect("own stat");
    assert!(me.user_us + me.sys_us < 3_600_000_000);
}

#[test]
fn cpu_and_memory_readings_move() {
    let before = CpuSnapshot::process();
    let mut x = 0u64;
    for i in 0..20_000_000u64 {
        x = x.wrapping_mul(31).wrapping_add(i);
    }
    std::hint::black_box(x);
    let spent = CpuSnapshot::process().since(before);
    assert!(spent.total_secs() > 0.0, "{spent:?}");
    assert!(vm_hwm().unwrap_or(0) > 0);
    assert!(rss_now().unwrap_or(0) > 0);
    let s = RssSampler::start(Duration::from_millis(1));
    std::thread::sleep(Duration::from_millis(20));
    assert!(s.finish().peak_bytes > 0);
}

#[test]
fn runtime_threads_report_their_cpu() {
    let acc = ThreadCpu::default();
    let rt = acc.runtime("t", 2).expect("runtime");
    rt.block_on(async {
        tokio::spawn(async {
            let mut x = 0u64;
            for i in 0..20_000_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            std::hint::black_box(x);
        })
        .await
        .expect("task");
    });
    drop(rt);
    assert!(acc.threads() >= 2);
    assert!(acc.total().total_secs() > 0.0);
}

#[test]
fn one_worker_runs_on_the_calling_thread_and_block_on_counts_it() {
    let acc = ThreadCpu::default();
    let rt = acc.runtime("t", 1).expect("runtime");
    let caller = std::thread::current().id();
    let ran_on = acc.block_on(&rt, async {
        tokio::spawn(async {
            let mut x = 0u64;
            for i in 0..20_000_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            std::hint::black_box(x);
            std::thread::current().id()
        })
        .await
        .expect("task")
    });
    assert_eq!(
        ran_on, caller,
        "a current-thread runtime runs its tasks in block_on"
    );
    drop(rt);
    assert!(acc.total().total_secs() > 0.0);
}
