use super::*;

#[test]
fn a_line_says_how_far_of_how_much_and_how_fast() {
    let l = line(
        "replay",
        Unit::Offsets,
        1_200,
        5_000,
        120.0,
        Duration::from_secs(10),
    );
    assert_eq!(l, "replay: 1200 of 5000 offsets (24%), 120/s, 10 s");
    let l = line(
        "loading",
        Unit::Bytes,
        3 << 20,
        0,
        1048576.0,
        Duration::from_secs(3),
    );
    assert_eq!(l, "loading: 3.00 MiB, 1.00 MiB/s, 3 s");
    assert_eq!(
        line("verifying", Unit::Time, 0, 0, 0.0, Duration::from_secs(7)),
        "verifying: 7 s"
    );
}
