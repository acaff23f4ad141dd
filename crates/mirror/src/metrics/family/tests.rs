use prometheus_client::registry::Registry;

use super::*;

fn rendered(fam: &Family<Counter>) -> Vec<String> {
    let mut registry = Registry::default();
    registry.register("t", "test", fam.clone());
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
    out.lines()
        .filter(|l| l.starts_with("t_total{"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn series_render_in_the_order_of_their_values_with_each_label() {
    let fam: Family<Counter> = Family::new(&["flow", "topic", "partition"]);
    fam.get(&["ab", "t", "1"]).inc();
    fam.get(&["a", "t", "10"]).inc_by(2);
    fam.get(&["a", "t", "1"]).inc_by(3);
    fam.get(&["a", "t", "1"]).inc();
    assert_eq!(
        rendered(&fam),
        [
            r#"t_total{flow="a",topic="t",partition="1"} 4"#,
            r#"t_total{flow="a",topic="t",partition="10"} 2"#,
            r#"t_total{flow="ab",topic="t",partition="1"} 1"#,
        ]
    );
}

#[test]
fn remove_prefix_drops_only_the_series_whose_values_start_with_it() {
    let fam: Family<Counter> = Family::new(&["flow", "topic", "partition"]);
    for (f, t) in [("a", "t"), ("a", "u"), ("ab", "t"), ("b", "t")] {
        fam.get(&[f, t, "0"]).inc();
    }
    fam.remove_prefix(&["a", "t"]);
    fam.remove_prefix(&["a", "t", "0", "extra"]);
    assert_eq!(rendered(&fam).len(), 3, "{:?}", rendered(&fam));
    fam.remove_prefix(&["a"]);
    let left = rendered(&fam);
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(left.iter().all(|l| !l.contains(r#"flow="a""#)), "{left:?}");
}

#[test]
fn a_value_holding_the_separator_keeps_its_labels_apart() {
    let fam: Family<Counter> = Family::new(&["flow", "topic"]);
    fam.get(&["x\0y", "t"]).inc();
    assert_eq!(
        rendered(&fam),
        ["t_total{flow=\"x\u{fffd}y\",topic=\"t\"} 1"]
    );
    fam.remove_prefix(&["x\0y"]);
    assert!(rendered(&fam).is_empty());
}

#[test]
fn a_key_made_once_names_the_series_of_its_values_in_every_family() {
    let a: Family<Counter> = Family::new(&["flow", "topic", "partition"]);
    let b: Family<Counter> = Family::new(&["flow", "topic", "partition"]);
    let key = SeriesKey::of(&["f", "t", "3"]);
    a.get_key(&key).inc();
    b.get_key(&key).inc_by(2);
    a.get(&["f", "t", "3"]).inc();
    assert_eq!(
        rendered(&a),
        [r#"t_total{flow="f",topic="t",partition="3"} 2"#]
    );
    assert_eq!(
        rendered(&b),
        [r#"t_total{flow="f",topic="t",partition="3"} 2"#]
    );
    assert_eq!(
        Arc::strong_count(&key.0),
        3,
        "both families share the key's one string"
    );
}
