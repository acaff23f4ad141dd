use super::*;

fn tp() -> TopicPartition {
    (Arc::from("t"), 0)
}
fn id(epoch: i16) -> ProducerIdentity {
    ProducerIdentity { id: 7, epoch }
}
fn ok(off: i64) -> Result<Ack, Error> {
    Ok(Ack {
        base_offset: off,
        log_append_time_ms: -1,
        duplicate: false,
    })
}
fn code(c: i16) -> Result<Ack, Error> {
    Err(Error::from_code(c).unwrap())
}

#[test]
fn sequences_room_and_in_order_delivery() {
    let mut s = Sequencer::new(5);
    assert!(
        s.next_transmit(&tp()).is_none(),
        "nothing sent before an identity"
    );
    s.set_identity(id(0));
    let mut toks = Vec::new();
    for i in 0..5 {
        assert!(s.has_room(&tp()));
        let (t, seq) = s.enqueue(&tp(), 10, 100);
        assert_eq!(seq, i * 10);
        toks.push(t);
    }
    assert!(!s.has_room(&tp()));
    let sent: Vec<_> = (0..5).map(|_| s.next_transmit(&tp()).unwrap()).collect();
    assert!(s.next_transmit(&tp()).is_none());
    assert_eq!(sent[3].base_sequence, 30);
    // Answers out of order: nothing is delivered until the first one is in.
    s.on_result(&tp(), toks[1], 1, ok(10));
    assert!(s.take_delivered(&tp()).is_empty());
    s.on_result(&tp(), toks[0], 1, ok(0));
    let d = s.take_delivered(&tp());
    assert_eq!(
        d.iter().map(|x| x.0).collect::<Vec<_>>(),
        vec![toks[0], toks[1]]
    );
    assert!(s.has_room(&tp()));
}

#[test]
fn an_idle_partition_gives_its_queue_back_and_keeps_its_sequence() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    let (t, _) = s.enqueue(&tp(), 10, 100);
    s.shrink_partition(&tp());
    let _ = s.next_transmit(&tp()).unwrap();
    s.shrink_partition(&tp());
    assert_eq!(s.partitions[&tp()].entries.len(), 1, "unresolved: kept");
    s.on_result(&tp(), t, 1, ok(0));
    assert_eq!(s.take_delivered(&tp()).len(), 1);
    assert!(s.partitions[&tp()].entries.capacity() > 0);
    s.shrink_partition(&tp());
    assert_eq!(s.partitions[&tp()].entries.capacity(), 0);
    assert_eq!(s.enqueue(&tp(), 5, 100).1, 10, "the sequence goes on");
}

#[test]
fn retry_keeps_sequence_and_later_batches_wait_their_turn() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    let (a, _) = s.enqueue(&tp(), 3, 100);
    let (b, _) = s.enqueue(&tp(), 3, 100);
    let ta = s.next_transmit(&tp()).unwrap();
    let tb = s.next_transmit(&tp()).unwrap();
    // Leader moved: a fails retriably, b then fails out of order (a is missing).
    s.on_result(&tp(), a, ta.attempt, code(6));
    s.on_result(&tp(), b, tb.attempt, code(45));
    assert!(
        !s.needs_identity(),
        "OOOSN behind a failed batch is a retry, not a reset"
    );
    let ra = s.next_transmit(&tp()).unwrap();
    assert_eq!((ra.token, ra.base_sequence, ra.attempt), (a, 0, 2));
    let rb = s.next_transmit(&tp()).unwrap();
    assert_eq!((rb.token, rb.base_sequence), (b, 3));
    s.on_result(&tp(), a, 2, ok(100));
    s.on_result(&tp(), b, 2, code(46)); // duplicate = success
    let d = s.take_delivered(&tp());
    assert_eq!(d.len(), 2);
    assert!(d[1].1.as_ref().unwrap().duplicate);
}

#[test]
fn stale_attempt_errors_are_ignored_but_successes_count() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    let (a, _) = s.enqueue(&tp(), 1, 100);
    let t1 = s.next_transmit(&tp()).unwrap();
    s.on_result(
        &tp(),
        a,
        t1.attempt,
        Err(Error::new(crate::error::ErrorKind::Timeout)),
    );
    let t2 = s.next_transmit(&tp()).unwrap();
    assert_eq!(t2.attempt, 2);
    s.on_result(&tp(), a, 1, code(6)); // stale
    assert!(s.take_delivered(&tp()).is_empty());
    s.on_result(&tp(), a, 2, ok(5));
    assert_eq!(
        s.take_delivered(&tp())[0].1.as_ref().unwrap().base_offset,
        5
    );
}

#[test]
fn out_of_order_at_the_head_bumps_epoch_and_renumbers() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    let (a, _) = s.enqueue(&tp(), 2, 100);
    let (b, _) = s.enqueue(&tp(), 2, 100);
    let (c, _) = s.enqueue(&tp(), 2, 100);
    for _ in 0..3 {
        s.next_transmit(&tp()).unwrap();
    }
    s.on_result(&tp(), a, 1, ok(0));
    s.on_result(&tp(), b, 1, code(45)); // a acked, so this is a real sequence problem
    assert!(s.needs_identity());
    assert!(s.next_transmit(&tp()).is_none(), "sending stops");
    assert_eq!(s.in_flight(), 1, "c is still in flight");
    s.on_result(&tp(), c, 1, code(45));
    assert_eq!(s.in_flight(), 0);
    s.set_identity(id(1));
    let rb = s.next_transmit(&tp()).unwrap();
    assert_eq!((rb.token, rb.base_sequence, rb.identity.epoch), (b, 0, 1));
    let rc = s.next_transmit(&tp()).unwrap();
    assert_eq!((rc.token, rc.base_sequence), (c, 2));
    assert_eq!(s.peek_sequence(&tp()), 4);
    assert_eq!(s.take_delivered(&tp()).len(), 1, "a is delivered");
}

#[test]
fn permanent_failure_is_delivered_and_resets_the_sequence() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    let (a, _) = s.enqueue(&tp(), 2, 100);
    let (b, _) = s.enqueue(&tp(), 2, 100);
    s.next_transmit(&tp()).unwrap();
    s.on_result(&tp(), a, 1, code(10)); // MESSAGE_TOO_LARGE
    let d = s.take_delivered(&tp());
    assert_eq!(d[0].1.as_ref().unwrap_err().kafka_code(), Some(10));
    assert_eq!(d[1].0, b);
    assert!(
        d[1].1.is_err(),
        "b is not renumbered and written past the hole"
    );
    assert!(s.needs_identity());
    s.set_identity(id(1));
    s.reset_partition(&tp());
    let (c, seq) = s.enqueue(&tp(), 1, 100);
    let rc = s.next_transmit(&tp()).unwrap();
    assert_eq!((rc.token, rc.base_sequence, seq), (c, 0, 0));
}

#[test]
fn a_batch_failing_for_good_fails_every_later_batch_of_its_partition() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    let other: TopicPartition = (Arc::from("t"), 1);
    let (a, _) = s.enqueue(&tp(), 2, 100);
    let (b, _) = s.enqueue(&tp(), 2, 100);
    let (c, _) = s.enqueue(&tp(), 2, 100);
    let (o, _) = s.enqueue(&other, 1, 100);
    let ta = s.next_transmit(&tp()).unwrap();
    let tb = s.next_transmit(&tp()).unwrap();
    s.next_transmit(&other).unwrap();
    s.on_result(&tp(), a, ta.attempt, code(10)); // MESSAGE_TOO_LARGE
    // b is still in flight: its (stale) answer arrives later and changes nothing.
    s.on_result(&tp(), b, tb.attempt, ok(2));
    let d = s.take_delivered(&tp());
    let tokens: Vec<Token> = d.iter().map(|(t, _)| *t).collect();
    assert_eq!(tokens, vec![a, b, c]);
    assert!(
        d.iter().all(|(_, r)| r.is_err()),
        "no batch lands past the hole"
    );
    // A batch enqueued afterwards fails at once and is never sent.
    let (late, _) = s.enqueue(&tp(), 1, 100);
    s.set_identity(id(1));
    assert_eq!(s.peek_transmit(&tp()), None);
    let d = s.take_delivered(&tp());
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].0, late);
    assert!(d[0].1.is_err());
    // Other partitions go on under the new epoch, renumbered from 0.
    let t = s.next_transmit(&other).unwrap();
    assert_eq!((t.token, t.base_sequence), (o, 0));
    // After a reset the partition takes batches again, from sequence 0.
    s.reset_partition(&tp());
    let (n, seq) = s.enqueue(&tp(), 1, 100);
    assert_eq!(seq, 0);
    assert_eq!(s.next_transmit(&tp()).unwrap().token, n);
}

#[test]
fn reset_all_lets_every_failed_partition_take_batches_again() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    let (a, _) = s.enqueue(&tpn(0), 1, 100);
    let (b, _) = s.enqueue(&tpn(1), 1, 100);
    s.next_transmit(&tpn(0)).unwrap();
    s.next_transmit(&tpn(1)).unwrap();
    s.on_result(&tpn(0), a, 1, code(10));
    s.on_result(&tpn(1), b, 1, code(10));
    assert!(s.partition_failure(&tpn(0)).is_some() && s.partition_failure(&tpn(1)).is_some());
    s.take_delivered(&tpn(0));
    s.take_delivered(&tpn(1));
    s.set_identity(id(1));
    s.reset_all();
    for p in 0..2 {
        assert!(s.partition_failure(&tpn(p)).is_none());
        let (t, seq) = s.enqueue(&tpn(p), 1, 100);
        assert_eq!(seq, 0);
        assert_eq!(s.next_transmit(&tpn(p)).unwrap().token, t);
    }
}

#[test]
fn a_delivery_deadline_fails_later_batches_too() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    let (a, _) = s.enqueue(&tp(), 1, 100);
    let (b, _) = s.enqueue(&tp(), 1, 100);
    s.next_transmit(&tp()).unwrap();
    s.next_transmit(&tp()).unwrap();
    s.fail(&tp(), a, Error::new(crate::error::ErrorKind::Timeout));
    assert!(s.partition_failure(&tp()).is_some());
    // Both requests are still in flight: nothing is delivered until they drain.
    assert!(s.take_delivered(&tp()).is_empty());
    s.on_result(&tp(), a, 1, code(7));
    s.on_result(&tp(), b, 1, ok(1));
    let d = s.take_delivered(&tp());
    assert_eq!(d.iter().map(|(t, _)| *t).collect::<Vec<_>>(), vec![a, b]);
    assert!(d.iter().all(|(_, r)| r.is_err()));
}

#[test]
fn unknown_producer_id_needs_new_identity() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    let (a, _) = s.enqueue(&tp(), 1, 100);
    s.next_transmit(&tp()).unwrap();
    s.on_result(&tp(), a, 1, code(59));
    assert!(s.needs_identity());
}

#[test]
fn sequence_wraps_like_kafka() {
    assert_eq!(increment_sequence(i32::MAX - 1, 1), i32::MAX);
    assert_eq!(increment_sequence(i32::MAX, 1), 0);
    assert_eq!(increment_sequence(i32::MAX - 2, 5), 2);
}

fn tpn(i: i32) -> TopicPartition {
    (Arc::from("t"), i)
}

/// Takes the ready queue and assembles one request.
fn request(
    s: &mut Sequencer,
    cands: &mut VecDeque<TopicPartition>,
    max: usize,
) -> (Vec<(TopicPartition, Transmit)>, Vec<TopicPartition>, usize) {
    s.take_ready(cands);
    let (mut out, mut again) = (Vec::new(), Vec::new());
    let bytes = s.assemble(cands, max, &mut out, &mut again);
    (out, again, bytes)
}

#[test]
fn assembly_takes_one_batch_per_partition_per_request_in_sequence_order() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    for round in 0..3 {
        for p in 0..4 {
            s.enqueue(&tpn(p), 10, 1000 + round);
        }
    }
    let mut cands = VecDeque::new();
    let mut seen = Vec::new();
    for round in 0..3 {
        let (out, again, bytes) = request(&mut s, &mut cands, 1 << 20);
        assert!(cands.is_empty());
        let parts: Vec<i32> = out.iter().map(|(tp, _)| tp.1).collect();
        assert_eq!(
            parts,
            vec![0, 1, 2, 3],
            "one batch of every partition, in order"
        );
        assert!(out.iter().all(|(_, t)| t.base_sequence == round * 10));
        assert_eq!(bytes, 4 * (1000 + round as usize));
        seen.push(out.len());
        // Partitions with more ready batches are handed back for the next request.
        if round < 2 {
            assert_eq!(again.len(), 4);
        } else {
            assert!(again.is_empty());
        }
        for tp in &again {
            s.mark_ready(tp);
        }
    }
    assert_eq!(seen, vec![4, 4, 4]);
    assert_eq!(s.in_flight(), 12);
    let (out, _, _) = request(&mut s, &mut cands, 1 << 20);
    assert!(out.is_empty(), "everything is in flight");
}

#[test]
fn assembly_respects_the_byte_cap_and_sends_an_oversized_batch_alone() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    s.enqueue(&tpn(0), 1, 400);
    s.enqueue(&tpn(1), 1, 400);
    s.enqueue(&tpn(2), 1, 400);
    s.enqueue(&tpn(3), 1, 5000);
    s.enqueue(&tpn(4), 1, 100);
    let mut cands = VecDeque::new();
    let (out, again, bytes) = request(&mut s, &mut cands, 1000);
    assert_eq!(out.iter().map(|x| x.0.1).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(bytes, 800);
    assert!(again.is_empty());
    assert_eq!(
        cands.front().map(|t| t.1),
        Some(2),
        "the rest wait their turn"
    );
    let (mut out, mut again) = (Vec::new(), Vec::new());
    assert_eq!(s.assemble(&mut cands, 1000, &mut out, &mut again), 400);
    assert_eq!(
        out.len(),
        1,
        "partition 3's big batch does not fit after partition 2"
    );
    out.clear();
    assert_eq!(s.assemble(&mut cands, 1000, &mut out, &mut again), 5000);
    assert_eq!(out[0].0.1, 3, "an oversized batch goes alone");
    out.clear();
    assert_eq!(s.assemble(&mut cands, 1000, &mut out, &mut again), 100);
    assert!(cands.is_empty());
}

#[test]
fn assembly_queues_retries_first_and_waits_for_a_new_identity() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    let (a, _) = s.enqueue(&tpn(0), 2, 10);
    let mut cands = VecDeque::new();
    let (out, _, _) = request(&mut s, &mut cands, 1 << 20);
    assert_eq!(out.len(), 1);
    s.enqueue(&tpn(0), 2, 10);
    s.enqueue(&tpn(1), 2, 10);
    // a fails retriably before the second batch is sent: the retry goes first, with
    // its sequence, and the second batch of partition 0 waits for the next request.
    s.on_result(&tpn(0), a, 1, code(6));
    let (out, again, _) = request(&mut s, &mut cands, 1 << 20);
    let got: Vec<_> = out
        .iter()
        .map(|(tp, t)| (tp.1, t.base_sequence, t.attempt))
        .collect();
    assert_eq!(got, vec![(0, 0, 2), (1, 0, 1)]);
    assert_eq!(again.iter().map(|t| t.1).collect::<Vec<_>>(), vec![0]);
    for tp in &again {
        s.mark_ready(tp);
    }
    // A fenced epoch stops assembly; the new identity queues the partition again.
    s.on_result(&tpn(1), out[1].1.token, 1, code(59));
    assert!(s.needs_identity());
    let (out2, _, bytes) = request(&mut s, &mut cands, 1 << 20);
    assert!(out2.is_empty() && bytes == 0);
    s.on_result(&tpn(0), a, 2, ok(0));
    s.set_identity(id(1));
    cands.clear();
    let (out3, _, _) = request(&mut s, &mut cands, 1 << 20);
    let mut got: Vec<_> = out3
        .iter()
        .map(|(tp, t)| (tp.1, t.base_sequence, t.identity.epoch))
        .collect();
    got.sort_unstable(); // set_identity queues partitions in no particular order
    assert_eq!(
        got,
        vec![(0, 0, 1), (1, 0, 1)],
        "renumbered from 0 under epoch 1"
    );
    assert_eq!(s.take_delivered(&tpn(0)).len(), 1);
    assert_eq!(s.unresolved(), 2);
}

#[test]
fn duplicate_sequence_number_is_success_without_an_offset() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    let (a, _) = s.enqueue(&tp(), 1, 100);
    let t = s.next_transmit(&tp()).unwrap();
    s.on_result(&tp(), a, t.attempt, code(46));
    let d = s.take_delivered(&tp());
    assert_eq!(
        d[0].1.as_ref().unwrap(),
        &Ack {
            base_offset: -1,
            log_append_time_ms: -1,
            duplicate: true,
        },
        "the broker gave no offset: -1, never a made-up one"
    );
}

#[test]
fn a_request_takes_batches_up_to_the_byte_cap_inclusive() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    s.enqueue(&tpn(0), 1, 400);
    s.enqueue(&tpn(1), 1, 600);
    s.enqueue(&tpn(2), 1, 1);
    let mut cands = VecDeque::new();
    let (out, _, bytes) = request(&mut s, &mut cands, 1000);
    assert_eq!(out.iter().map(|x| x.0.1).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(bytes, 1000, "a request exactly at the cap is within it");
}

#[test]
fn a_partition_is_queued_as_ready_while_it_has_a_batch_to_send() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    assert!(!s.has_ready(), "nothing enqueued");
    s.enqueue(&tp(), 1, 100);
    assert!(s.has_ready());
    let mut cands = VecDeque::new();
    s.take_ready(&mut cands);
    assert!(!s.has_ready(), "taken by the sink");
    s.mark_ready(&tp());
    assert!(s.has_ready(), "given back, not sent");
}

#[test]
fn the_identity_stamped_is_the_one_installed_last() {
    let mut s = Sequencer::new(5);
    assert_eq!(s.identity(), None);
    s.set_identity(id(0));
    assert_eq!(s.identity(), Some(id(0)));
    s.set_identity(id(1));
    assert_eq!(s.identity(), Some(id(1)));
}

#[test]
fn a_peek_names_the_batch_sent_next_without_sending_it() {
    let mut s = Sequencer::new(5);
    s.set_identity(id(0));
    let (a, _) = s.enqueue(&tp(), 1, 100);
    let (b, _) = s.enqueue(&tp(), 1, 100);
    assert_eq!(s.peek_transmit(&tp()), Some(a));
    assert_eq!(s.peek_transmit(&tp()), Some(a), "peeking sends nothing");
    assert_eq!(s.in_flight(), 0);
    assert_eq!(s.next_transmit(&tp()).unwrap().token, a);
    assert_eq!(s.peek_transmit(&tp()), Some(b), "in sequence order");
}
