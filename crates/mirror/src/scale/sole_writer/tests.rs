use super::*;

fn member(id: &str, host: &str, held_in: Option<i32>) -> (String, MemberMetadata) {
    let mut m = MemberMetadata::new(host, 1);
    if let Some(g) = held_in {
        m.generation = g;
        m.owned = vec![PartitionId::writer()];
    }
    (id.to_owned(), m)
}

#[test]
fn a_restart_does_not_wait_for_its_dead_self() {
    let id = |host: &str, pid: u32| format!("{}-0f3c", writer_client_id("c", host, pid));
    let members = [
        id("h", 10),                    // dead
        id("h", 11),                    // alive
        id("other", 10),                // another host
        id("h", 7),                     // this pid, reused
        id("h.example", 12),            // another host sharing a prefix
        "c.writer.h.pid9x-0f3c".into(), // not a pid
        "someone-else-0f3c".into(),
    ];
    let alive = |pid| pid == 11 || pid == 7;
    let gone = dead_predecessors(members.iter().map(String::as_str), "c", "h", 7, alive);
    assert_eq!(gone, [id("h", 10), id("h", 7)]);
}

#[test]
fn the_holder_keeps_it() {
    let members = [member("a", "h1", None), member("z", "h2", Some(3))];
    assert_eq!(holder(&members), Some("z"));
}

#[test]
fn of_several_claimants_the_latest_generation_keeps_it() {
    let members = [member("a", "h1", Some(2)), member("z", "h2", Some(5))];
    assert_eq!(holder(&members), Some("z"));
}

#[test]
fn otherwise_the_smallest_member_id_is_chosen() {
    let members = [member("m2", "h1", None), member("m1", "h2", None)];
    assert_eq!(holder(&members), Some("m1"));
    assert_eq!(holder(&[]), None);
}

#[test]
fn everyone_else_gets_nothing() {
    let mut proto = SoleWriter::new("h");
    let joined: Vec<JoinedMember> = [member("b", "h1", None), member("a", "h2", None)]
        .into_iter()
        .map(|(id, m)| JoinedMember {
            member_id: id,
            instance_id: None,
            metadata: Bytes::from(m.encode().unwrap()),
        })
        .chain([JoinedMember {
            member_id: "0-garbled".into(),
            instance_id: None,
            metadata: Bytes::from_static(b"not ours"),
        }])
        .collect();
    let out = proto.assign(SOLE_WRITER_PROTOCOL, 1, &joined).unwrap();
    let holding: Vec<&str> = out
        .iter()
        .filter(|(_, data)| SoleWriter::holds(data))
        .map(|(id, _)| id.as_str())
        .collect();
    assert_eq!(holding, ["a"]);
    assert_eq!(out.len(), 3);
}

#[test]
fn a_scale_out_member_and_a_sole_writer_speak_different_protocols() {
    assert_ne!(SOLE_WRITER_PROTOCOL, super::super::PROTOCOL_NAME);
    let mut proto = SoleWriter::new("h");
    assert!(proto.assign(super::super::PROTOCOL_NAME, 1, &[]).is_err());
}
