use std::time::Duration;

use super::*;

/// `true` items are data, `false` control.
fn data(item: &(u32, bool)) -> bool {
    item.1
}

async fn soon(inbox: &Inbox<(u32, bool)>, items: bool, stop: bool) -> Option<Inbound<(u32, bool)>> {
    tokio::time::timeout(Duration::from_millis(50), inbox.recv(items, stop, data))
        .await
        .ok()
}

#[tokio::test]
async fn rule_1_items_come_out_in_the_order_they_went_in() {
    let inbox = Inbox::new(4);
    inbox.offer((1, true)).unwrap();
    inbox.push_control((2, false));
    inbox.offer((3, true)).unwrap();
    for n in [1, 2, 3] {
        assert!(matches!(soon(&inbox, true, true).await, Some(Inbound::Item((m, _))) if m == n));
    }
    assert_eq!(soon(&inbox, true, true).await, None);
}

#[tokio::test]
async fn rule_2_data_is_refused_past_the_depth_control_items_never_are() {
    let inbox = Inbox::new(2);
    assert!(inbox.offer((1, true)).is_ok());
    inbox.push_control((2, false));
    assert!(
        inbox.has_room(),
        "control items do not count against the depth"
    );
    assert!(inbox.offer((3, true)).is_ok());
    assert!(!inbox.has_room());
    assert_eq!(inbox.offer((4, true)), Err((4, true)));
    inbox.push_control((5, false));
    let mut got = Vec::new();
    while let Some(Inbound::Item((n, _))) = soon(&inbox, true, false).await {
        got.push(n);
    }
    assert_eq!(got, [1, 2, 3, 5]);
    assert!(inbox.has_room(), "taking data gives its room back");
}

#[tokio::test]
async fn rule_3_the_stop_wakes_a_receiver_that_wants_no_items() {
    let inbox = Inbox::new(4);
    inbox.offer((1, true)).unwrap();
    assert_eq!(
        soon(&inbox, false, true).await,
        None,
        "items are left queued"
    );
    inbox.stop();
    assert_eq!(soon(&inbox, false, true).await, Some(Inbound::Stop));
    assert!(inbox.stopped());
    // Not watching the stop: the queued item still comes, and then nothing.
    assert_eq!(
        soon(&inbox, true, false).await,
        Some(Inbound::Item((1, true)))
    );
    assert_eq!(soon(&inbox, true, false).await, None);
    assert_eq!(
        soon(&inbox, false, false).await,
        None,
        "wanting neither never wakes"
    );
}

#[tokio::test]
async fn rule_4_no_wake_up_is_lost() {
    let inbox = std::sync::Arc::new(Inbox::new(4));
    // Pushed while nobody waits, with a receive dropped in between.
    assert_eq!(soon(&inbox, true, true).await, None);
    inbox.offer((1, true)).unwrap();
    assert_eq!(
        soon(&inbox, true, true).await,
        Some(Inbound::Item((1, true)))
    );
    // Pushed while a receiver waits on another task.
    let waiting = {
        let inbox = std::sync::Arc::clone(&inbox);
        tokio::spawn(async move { inbox.recv(true, true, data).await })
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    inbox.push_control((2, false));
    let got = tokio::time::timeout(Duration::from_secs(5), waiting).await;
    assert!(matches!(got, Ok(Ok(Inbound::Item((2, false))))));
    // A stop while not waiting.
    inbox.stop();
    assert_eq!(soon(&inbox, false, true).await, Some(Inbound::Stop));
}

async fn ready_soon(inbox: &Inbox<(u32, bool)>) -> bool {
    tokio::time::timeout(Duration::from_millis(50), inbox.ready())
        .await
        .is_ok()
}

#[tokio::test]
async fn rule_6_a_wait_that_is_dropped_leaves_nothing_behind() {
    let inbox = Inbox::<(u32, bool)>::new(4);
    assert!(!ready_soon(&inbox).await);
    assert_eq!(soon(&inbox, true, true).await, None);
    assert!(
        inbox.lock().waker.is_none(),
        "the timed-out waits took their waker out"
    );
    // A wait that ended by finding its item leaves none either.
    inbox.offer((1, true)).unwrap();
    assert!(ready_soon(&inbox).await);
    assert!(inbox.lock().waker.is_none());
    // Two waits of one task: dropping one keeps the other's wake-up.
    let _ = soon(&inbox, true, true).await;
    let (mut a, mut b) = (Box::pin(inbox.ready()), Box::pin(inbox.ready()));
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    assert!(a.as_mut().poll(&mut cx).is_pending() && b.as_mut().poll(&mut cx).is_pending());
    drop(a);
    assert!(inbox.lock().waker.is_some(), "the other wait still has it");
    drop(b);
    assert!(inbox.lock().waker.is_none());
}

#[tokio::test]
async fn rule_5_a_parked_receiver_wakes_for_any_item_or_the_stop() {
    for kind in ["data", "control", "stop"] {
        let inbox = std::sync::Arc::new(Inbox::new(4));
        assert!(inbox.is_empty());
        assert!(!ready_soon(&inbox).await, "nothing there: it stays parked");
        let parked = {
            let inbox = std::sync::Arc::clone(&inbox);
            tokio::spawn(async move { inbox.ready().await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        match kind {
            "data" => inbox.offer((1, true)).unwrap(),
            "control" => inbox.push_control((1, false)),
            _ => inbox.stop(),
        }
        let woke = tokio::time::timeout(Duration::from_secs(5), parked).await;
        assert!(matches!(woke, Ok(Ok(()))), "{kind} wakes it");
        // It took nothing: the item (or the stop) is there for the next receive.
        assert!(ready_soon(&inbox).await, "{kind} is still there");
        let next = soon(&inbox, true, true).await;
        match kind {
            "stop" => assert_eq!(next, Some(Inbound::Stop)),
            _ => assert!(matches!(next, Some(Inbound::Item((1, _))))),
        }
    }
}
