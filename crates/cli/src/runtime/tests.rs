use super::*;

#[test]
fn one_worker_is_a_current_thread_runtime() {
    let rt = engine_runtime(1).build().expect("runtime");
    assert_eq!(
        rt.handle().runtime_flavor(),
        tokio::runtime::RuntimeFlavor::CurrentThread
    );
    // Timers and spawned tasks run while `block_on` drives the runtime.
    let v = rt.block_on(async {
        let t = tokio::spawn(async {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            7
        });
        t.await.expect("task")
    });
    assert_eq!(v, 7);
}

#[test]
fn more_workers_are_a_multi_thread_runtime() {
    let rt = engine_runtime(2).build().expect("runtime");
    assert_eq!(
        rt.handle().runtime_flavor(),
        tokio::runtime::RuntimeFlavor::MultiThread
    );
    assert_eq!(rt.metrics().num_workers(), 2);
}
