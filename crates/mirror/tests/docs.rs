//! The documentation agrees with the code: every config key is documented in
//! docs/configuration.md and shown in examples/strait.toml (with its real default), the
//! example loads and validates, and every `strait_…` metric the docs name exists with the
//! labels they give it.
//!
//! The key list is derived from the config model (a `ConfigFile` with every optional
//! table and key present, serialized to TOML), so a new key fails this test until it is
//! documented. The structs with optional keys are written out below without `..`, so a
//! new field there does not compile until it is added here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use strait_mirror::Metrics;
use strait_mirror::config::ConfigFile;
use strait_mirror::config::delivery::DeliverySpec;
use strait_mirror::config::model::{ClusterSpec, FlowSpec, MetricsSpec};
use strait_mirror::config::scale_out::ScaleOutSpec;
use strait_mirror::config::security::{SaslMechanism, SaslSpec, SecuritySpec, TlsSpec};
use strait_mirror::config::{load_str, parse_str};
use strait_mirror::error::IncidentKind;
use strait_mirror::metrics::FlowState;

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn no_env(_: &str) -> Option<String> {
    None
}

/// A config with both clusters, one flow and every table present, parsed by Strait's own
/// loader: what serde fills in is each key's real default.
const MINIMAL: &str = r#"
[clusters.primary]
bootstrap_servers = ["a:9092"]
[clusters.primary.security]
[clusters.primary.security.tls]
[clusters.dr]
bootstrap_servers = "b:9092"
[[flows]]
source = "primary"
target = "dr"
[flows.scale_out]
"#;

fn defaults() -> ConfigFile {
    parse_str(MINIMAL, "defaults.toml", &no_env).expect("the minimal config parses")
}

/// Every key of the model, each optional one set, so that serialization writes them all.
fn everything() -> ConfigFile {
    let d = defaults();
    let c = &d.clusters["primary"];
    let f = &d.flows[0];
    let so = f.scale_out.clone().expect("scale_out");
    let cluster = ClusterSpec {
        bootstrap_servers: c.bootstrap_servers.clone(),
        client_id: c.client_id.clone(),
        request_timeout: c.request_timeout,
        connect_timeout: c.connect_timeout,
        metadata_refresh_interval: c.metadata_refresh_interval,
        security: SecuritySpec {
            protocol: c.security.protocol,
            tls: Some(TlsSpec {
                ca_file: Some("ca.pem".into()),
                cert_file: Some("c.pem".into()),
                key_file: Some("c.key".into()),
                server_name: Some("n".into()),
                handshake_timeout: Some(strait_mirror::config::units::HumanDuration::secs(1)),
            }),
            sasl: Some(SaslSpec {
                mechanism: SaslMechanism::Plain,
                username: Some("u".into()),
                password: Some("p".into()),
                token_file: Some("t".into()),
                token_endpoint_url: Some("https://x".into()),
                client_id: Some("i".into()),
                client_secret: Some("s".into()),
                scope: Some("s".into()),
                token_endpoint_ca_file: Some("ca.pem".into()),
                extensions: BTreeMap::from([("k".into(), "v".into())]),
                region: Some("r".into()),
            }),
        },
    };
    let mut naming = f.naming.clone();
    naming.rename.insert("a".into(), "b".into());
    let flow = FlowSpec {
        name: Some("n".into()),
        source: f.source.clone(),
        target: f.target.clone(),
        enabled: f.enabled,
        state_topic: Some("s".into()),
        topics: f.topics.clone(),
        naming,
        groups: f.groups.clone(),
        topic_configs: f.topic_configs.clone(),
        sync: f.sync,
        intervals: f.intervals,
        delivery: DeliverySpec {
            guarantee: f.delivery.guarantee,
            transaction_interval: f.delivery.transaction_interval,
            transaction_timeout: f.delivery.transaction_timeout,
            transactional_id: Some("t".into()),
        },
        scale_out: Some(ScaleOutSpec {
            group: Some("g".into()),
            instance_id: Some("i".into()),
            session_timeout: so.session_timeout,
            rebalance_timeout: so.rebalance_timeout,
            capacity: so.capacity,
            slots: so.slots,
        }),
    };
    let metrics = MetricsSpec {
        enabled: d.metrics.enabled,
        listen: d.metrics.listen.clone(),
        max_connections: d.metrics.max_connections,
        read_timeout: d.metrics.read_timeout,
        write_timeout: d.metrics.write_timeout,
        stalled_after: d.metrics.stalled_after,
        tls_cert_file: Some("c.pem".into()),
        tls_key_file: Some("c.key".into()),
        basic_auth_username: Some("u".into()),
        basic_auth_password: Some("p".into()),
    };
    ConfigFile {
        clusters: BTreeMap::from([("primary".to_owned(), cluster)]),
        flows: vec![flow],
        engine: d.engine,
        metrics,
        logging: d.logging.clone(),
    }
}

/// The documented name of a table path: `clusters.<name>.security`, `flows.topics`.
fn table_name(path: &[String]) -> String {
    path.join(".")
}

/// Tables whose keys are the user's (a rename map, SASL extensions), not the model's.
const FREE_FORM: &[&str] = &[
    "flows.naming.rename",
    "clusters.<name>.security.sasl.extensions",
];

/// `(table, key)` for every key of `value`, cluster names written `<name>`.
fn keys(value: &toml::Value, at: &mut Vec<String>, out: &mut BTreeSet<(String, String)>) {
    match value {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let table = table_name(at);
                if FREE_FORM.contains(&table.as_str()) {
                    continue;
                }
                let key = if table == "clusters" {
                    "<name>"
                } else {
                    k.as_str()
                };
                at.push(key.to_owned());
                let sub_table = v.is_table() && !FREE_FORM.contains(&table_name(at).as_str());
                if table != "clusters" && !table.is_empty() && !sub_table {
                    out.insert((table.clone(), key.to_owned()));
                }
                keys(v, at, out);
                at.pop();
            }
        }
        toml::Value::Array(a) if a.iter().all(toml::Value::is_table) && !a.is_empty() => {
            for v in a {
                keys(v, at, out);
            }
        }
        _ => {}
    }
}

fn model_keys() -> BTreeSet<(String, String)> {
    let value = toml::Value::try_from(everything()).expect("the model serializes");
    let mut out = BTreeSet::new();
    keys(&value, &mut Vec::new(), &mut out);
    out
}

/// The value at `table.key` in `value` (clusters by `<name>` = their first entry).
fn lookup<'a>(value: &'a toml::Value, table: &str, key: &str) -> Option<&'a toml::Value> {
    let mut v = value;
    for part in table.split('.').chain([key]).filter(|p| !p.is_empty()) {
        v = match v {
            toml::Value::Array(a) => a.first()?.get(part)?,
            toml::Value::Table(t) if part == "<name>" => t.values().next()?,
            _ => v.get(part)?,
        };
    }
    match v {
        toml::Value::Array(a) if a.iter().all(toml::Value::is_table) && !a.is_empty() => a.first(),
        _ => Some(v),
    }
}

/// The section of docs/configuration.md documenting `table`: from the heading (or the
/// paragraph) that names it to the next `###` heading.
fn section<'a>(doc: &'a str, table: &str) -> Option<&'a str> {
    let header = match table {
        "flows" => "`[[flows]]`".to_owned(),
        t => format!("`[{t}]`"),
    };
    let start = doc.find(&header)?;
    let rest = &doc[start..];
    let end = rest[1..].find("\n### ").map_or(rest.len(), |e| e + 1);
    Some(&rest[..end])
}

#[test]
fn every_config_key_is_documented_in_configuration_md() {
    let doc = read("docs/configuration.md");
    let keys = model_keys();
    let mut missing = Vec::new();
    for (table, key) in &keys {
        match section(&doc, table) {
            None => missing.push(format!("[{table}] (no section)")),
            Some(s) if !s.contains(&format!("`{key}`")) => missing.push(format!("[{table}] {key}")),
            Some(_) => {}
        }
    }
    println!("{} keys checked against docs/configuration.md", keys.len());
    assert!(
        keys.len() > 70,
        "only {} keys derived from the model",
        keys.len()
    );
    assert!(
        missing.is_empty(),
        "undocumented in docs/configuration.md: {missing:#?}"
    );
}

/// `(table, key, value text, line)` for every key the example shows, commented out or
/// not, clusters written `<name>`.
fn example_keys(text: &str) -> Vec<(String, String, String, String)> {
    let header = regex::Regex::new(r"^#?\s*\[\[?([a-z_.]+)\]\]?").unwrap();
    let key = regex::Regex::new(r"^#?\s*([a-z_]+)\s*=\s*(.*)$").unwrap();
    let mut table = String::new();
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(c) = header.captures(line) {
            let t = &c[1];
            table = match t.strip_prefix("clusters.") {
                Some(rest) => {
                    let mut parts: Vec<&str> = rest.split('.').collect();
                    parts[0] = "<name>";
                    format!("clusters.{}", parts.join("."))
                }
                None => t.to_owned(),
            };
        } else if let Some(c) = key.captures(line) {
            // The value ends at a `#` comment outside a string (good enough for the
            // example's values, which hold no `#`).
            let mut value = c[2].split(" #").next().unwrap_or("").trim().to_owned();
            // An array written over several (commented) lines.
            while value.matches('[').count() > value.matches(']').count() {
                let Some(next) = lines.next() else { break };
                value.push(' ');
                value.push_str(next.trim_start_matches('#').trim());
            }
            out.push((table.clone(), c[1].to_owned(), value, line.to_owned()));
        }
    }
    out
}

#[test]
fn examples_strait_toml_shows_every_key_with_its_real_default_and_loads() {
    let text = read("examples/strait.toml");
    load_str(&text, "examples/strait.toml", &no_env).expect("examples/strait.toml loads");
    let shown = example_keys(&text);
    let shown_set: BTreeSet<(String, String)> = shown
        .iter()
        .map(|(t, k, _, _)| (t.clone(), k.clone()))
        .collect();
    let keys = model_keys();
    let missing: Vec<_> = keys.difference(&shown_set).collect();
    let unknown: Vec<_> = shown_set.difference(&keys).collect();
    assert!(
        missing.is_empty(),
        "keys examples/strait.toml does not show: {missing:#?}"
    );
    assert!(
        unknown.is_empty(),
        "keys examples/strait.toml shows that do not exist: {unknown:#?}"
    );

    // Each commented-out value is the default, unless its line says it is not: put it in
    // the minimal config, parse it, and compare with the default as serialized.
    let default = default_value();
    let mut compared = 0;
    let mut wrong = Vec::new();
    for (table, key, value, line) in &shown {
        if !line.starts_with('#') || value.is_empty() || line.contains("not the default") {
            continue;
        }
        let Some(want) = lookup(&default, table, key) else {
            // No default (an optional key): the example must say it is an example.
            continue;
        };
        let parsed = match with_value(table, key, value) {
            Ok(p) => p,
            Err(e) => {
                wrong.push(format!("{line}\n    does not parse: {e}"));
                continue;
            }
        };
        compared += 1;
        let got = lookup(&parsed, table, key);
        if got != Some(want) {
            wrong.push(format!("{line}\n    the default is {want}"));
        }
    }
    println!(
        "{} keys shown, {compared} commented values compared with the defaults",
        shown.len()
    );
    assert!(compared > 40, "only {compared} default values compared");
    assert!(
        wrong.is_empty(),
        "examples/strait.toml states wrong defaults: {wrong:#?}"
    );
}

/// The minimal config with `table.key = value` added, parsed and serialized again (so
/// that `"5m"` and `"300s"` compare equal).
fn with_value(table: &str, key: &str, value: &str) -> Result<toml::Value, String> {
    let header = match table {
        "flows" => String::new(),
        t => format!("[{}]", t.replace("<name>", "primary")),
    };
    let snippet = if header.is_empty() {
        MINIMAL.replace(
            "target = \"dr\"\n",
            &format!("target = \"dr\"\n{key} = {value}\n"),
        )
    } else if MINIMAL.contains(&format!("{header}\n")) {
        MINIMAL.replace(
            &format!("{header}\n"),
            &format!("{header}\n{key} = {value}\n"),
        )
    } else {
        format!("{MINIMAL}{header}\n{key} = {value}\n")
    };
    let parsed = parse_str(&snippet, "value.toml", &no_env).map_err(|e| e.to_string())?;
    Ok(to_value(&parsed))
}

/// Defaults the model leaves unset and the resolution fills in (`security.rs`), as the
/// docs write them.
const RESOLVED_DEFAULTS: &[(&str, &str, &str)] = &[(
    "clusters.<name>.security.tls",
    "handshake_timeout",
    "\"10s\"",
)];

/// The defaults as TOML, `[flows.delivery]` included (its serialization skips it when
/// it is all defaults).
fn default_value() -> toml::Value {
    to_value(&defaults())
}

/// `file` as TOML, `[flows.delivery]` always included.
fn to_value(d: &ConfigFile) -> toml::Value {
    let mut v = toml::Value::try_from(d).unwrap();
    let delivery = toml::Value::try_from(&d.flows[0].delivery).unwrap();
    v["flows"][0]
        .as_table_mut()
        .unwrap()
        .insert("delivery".into(), delivery);
    v
}

#[test]
fn configuration_md_states_the_real_defaults() {
    let doc = read("docs/configuration.md");
    let default = default_value();
    let heading = regex::Regex::new(r"`\[\[?([a-z_.<>]+)\]\]?`").unwrap();
    let mut table = String::new();
    let mut default_column = None;
    let mut compared = 0;
    let mut wrong = Vec::new();
    for line in doc.lines() {
        if line.starts_with("### ") || (line.starts_with('`') && line.contains("` — ")) {
            if let Some(c) = heading.captures(line) {
                table = c[1].to_owned();
            }
            default_column = None;
            continue;
        }
        if !line.starts_with('|') {
            continue;
        }
        // `\|` inside a cell is not a column separator.
        let line = line.replace("\\|", "\u{0}");
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.get(1) == Some(&"key") {
            default_column = cells.iter().position(|c| *c == "default");
            continue;
        }
        let (Some(col), Some(key)) = (default_column, cells.get(1)) else {
            continue;
        };
        let Some(key) = key.strip_prefix('`').and_then(|k| k.strip_suffix('`')) else {
            continue;
        };
        if !key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
            continue;
        }
        let cell = cells.get(col).copied().unwrap_or("");
        // Only a default written as one code span is a value (`"30s"`, `true`, `[".*"]`,
        // or a comma-separated list of regexes).
        let value =
            if cell.starts_with('`') && cell.ends_with('`') && cell.matches('`').count() == 2 {
                cell.trim_matches('`').to_owned()
            } else if cell.starts_with('`') && cell.ends_with('`') && key == "exclude" {
                let items: Vec<String> = cell
                    .split(", ")
                    .map(|i| format!("'{}'", i.trim_matches('`')))
                    .collect();
                format!("[{}]", items.join(", "))
            } else {
                continue;
            };
        if value.contains('<') {
            continue;
        }
        let Some(want) = lookup(&default, &table, key) else {
            if !RESOLVED_DEFAULTS.contains(&(table.as_str(), key, value.as_str())) {
                wrong.push(format!(
                    "[{table}] {key}: documented default {value}, the model has none"
                ));
            }
            continue;
        };
        let got = with_value(&table, key, &value)
            .or_else(|_| with_value(&table, key, &value.replace('"', "'")));
        compared += 1;
        match got {
            Ok(v) if lookup(&v, &table, key) == Some(want) => {}
            Ok(_) => wrong.push(format!(
                "[{table}] {key}: documented default {value}, the code's is {want}"
            )),
            Err(e) => wrong.push(format!(
                "[{table}] {key}: documented default {value} does not parse: {e}"
            )),
        }
    }
    println!("{compared} defaults in docs/configuration.md compared with the model");
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert!(
        compared > 50,
        "only {compared} documented defaults compared"
    );
}

/// Docs a user reads: the README and every guide in docs/, then the deploy files that
/// name metrics (alert rules, dashboard, ServiceMonitor).
fn user_docs() -> Vec<String> {
    let mut docs = vec!["README.md".to_owned()];
    let mut guides: Vec<String> = std::fs::read_dir(repo("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    guides.sort();
    docs.extend(guides);
    docs.extend(
        [
            "deploy/kubernetes/servicemonitor.yaml",
            "deploy/prometheus/alerts.yaml",
            "deploy/grafana/strait.json",
        ]
        .map(str::to_owned),
    );
    docs
}

/// Every family in the registry: its type and the label names its samples carry.
fn registry() -> BTreeMap<String, (String, BTreeSet<String>)> {
    let m = Metrics::new();
    let p = m.partition("f", "t", 0);
    p.acked(1, 10, 0.1);
    p.lag(1, 1.0);
    p.map_runs(1);
    p.held(1);
    p.slow_path("gapped");
    p.coalesced(2, 10);
    p.dropped("control");
    p.fetch_error();
    p.fetch_retry();
    p.produce_error();
    p.incident(IncidentKind::SourceTruncation);
    m.incident("f", "t", -1, IncidentKind::PartitionGrowthUnsupported);
    m.in_flight_bytes("f", 1);
    m.topic_created("f");
    m.topic_config_updates("f", 1);
    m.topic_sync_failure("f");
    m.groups_translated("f", 1);
    m.group_offsets_committed("f", "g", 1);
    m.group_translation_staleness("f", "g", 1.0);
    m.checkpoints_written("f", 1);
    m.heartbeat_emitted("f");
    m.state_records_written("f", 1);
    m.set_flow_state("f", FlowState::Running);
    m.transaction_ended("f", true, 1, 0.1, 0.1);
    m.fetch_wait_handle("f").observe(0.1);
    let text = m.render();
    let mut families: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut kinds: BTreeMap<String, String> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let (name, kind) = (it.next().unwrap(), it.next().unwrap_or(""));
            kinds.insert(name.to_owned(), kind.to_owned());
            families.entry(name.to_owned()).or_default();
        }
    }
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, _)) = line.split_once(' ') else {
            continue;
        };
        let (name, labels) = series.split_once('{').unwrap_or((series, ""));
        let family = kinds
            .keys()
            .filter(|f| name.starts_with(f.as_str()))
            .max_by_key(|f| f.len())
            .cloned();
        if let Some(f) = family {
            let set = families.entry(f).or_default();
            for l in labels
                .trim_end_matches('}')
                .split(',')
                .filter(|l| !l.is_empty())
            {
                let label = l.split('=').next().unwrap();
                if label != "le" {
                    set.insert(label.to_owned());
                }
            }
        }
    }
    // Counters are registered without `_total`; their samples and the docs carry it.
    families
        .into_iter()
        .map(|(name, labels)| {
            let kind = kinds[&name].clone();
            match kind.as_str() {
                "counter" => (format!("{name}_total"), (kind, labels)),
                _ => (name, (kind, labels)),
            }
        })
        .collect()
}

#[test]
fn every_metric_the_docs_name_exists_with_its_labels() {
    let families = registry();
    let name = regex::Regex::new(r"strait_[a-z0-9_]+(\{[^}]*\})?").unwrap();
    let label = regex::Regex::new(r"([a-z_]+)\s*(=|\}|,|$)").unwrap();
    let mut checked = BTreeSet::new();
    let mut labels_checked = 0;
    let mut wrong = Vec::new();
    for doc in &user_docs() {
        let text = read(doc);
        for line in text.lines() {
            for m in name.find_iter(line) {
                let mention = m.as_str();
                let (metric, braces) = mention.split_once('{').unwrap_or((mention, ""));
                // Crate names (`strait_mirror`), not metrics.
                if [
                    "strait_mirror",
                    "strait_client",
                    "strait_testkit",
                    "strait_records",
                    "strait_offsets",
                ]
                .iter()
                .any(|c| metric.starts_with(c))
                {
                    continue;
                }
                // A histogram's series: `_bucket`, `_sum`, `_count` of its family.
                let metric = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| {
                        metric.strip_suffix(s).filter(|base| {
                            families.get(*base).is_some_and(|(k, _)| k == "histogram")
                        })
                    })
                    .unwrap_or(metric);
                let Some((kind, have)) = families.get(metric) else {
                    wrong.push(format!("{doc}: {metric} is not a metric"));
                    continue;
                };
                checked.insert(metric.to_owned());
                let mut named: Vec<String> = label
                    .captures_iter(braces)
                    .map(|c| c[1].to_owned())
                    .collect();
                // The metrics table of monitoring.md: `| name | type | labels | … |`.
                if line.starts_with("| `strait_") {
                    let cells: Vec<&str> = line.split('|').collect();
                    if cells.get(2).map(|c| c.trim()) != Some(kind.as_str()) {
                        wrong.push(format!("{doc}: {metric} is a {kind}, not a{}", cells[2]));
                    }
                    if let Some(cell) = cells.get(3) {
                        let plain: String = cell.split('(').next().unwrap_or("").to_owned();
                        named.extend(
                            plain
                                .split(',')
                                .map(|s| s.trim().to_owned())
                                .filter(|s| !s.is_empty() && s != "–"),
                        );
                    }
                }
                for l in named {
                    if have.is_empty() {
                        // A family this test records no sample of: its labels are unknown.
                        continue;
                    }
                    labels_checked += 1;
                    if !have.contains(&l) {
                        wrong.push(format!(
                            "{doc}: {metric} has no label `{l}` (it has {have:?})"
                        ));
                    }
                }
            }
        }
    }
    // And the other way: every family of the registry is described in monitoring.md.
    let monitoring = read("docs/monitoring.md");
    for family in families.keys() {
        if !monitoring.contains(&format!("`{family}`")) {
            wrong.push(format!("docs/monitoring.md does not describe {family}"));
        }
    }
    println!(
        "{} metric names and {labels_checked} label mentions checked against the registry",
        checked.len()
    );
    assert!(
        checked.len() > 30,
        "only {} metric names found in the docs",
        checked.len()
    );
    assert!(labels_checked > 60, "only {labels_checked} labels checked");
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Every ```toml block of the README and the guides parses with Strait's loader: no
/// unknown key, no wrongly typed value (each `${VAR}` set to a dummy value). A block that
/// shows only a cluster's sub-table gets the cluster's `bootstrap_servers` added.
#[test]
fn every_toml_block_in_the_docs_parses() {
    let dummy = |_: &str| Some("x".to_owned());
    let table = regex::Regex::new(r"(?m)^\[clusters\.([A-Za-z0-9_-]+)").unwrap();
    let mut parsed = 0;
    let mut wrong = Vec::new();
    for doc in user_docs().iter().filter(|d| d.ends_with(".md")) {
        let text = read(doc);
        let mut block: Option<String> = None;
        for line in text.lines() {
            match (&mut block, line.trim_start()) {
                (None, l) if l.starts_with("```toml") => block = Some(String::new()),
                (Some(b), l) if l.starts_with("```") => {
                    let mut toml = b.clone();
                    if !toml.contains("bootstrap_servers") {
                        let names: BTreeSet<String> =
                            table.captures_iter(b).map(|c| c[1].to_owned()).collect();
                        for name in names {
                            toml = format!(
                                "[clusters.{name}]\nbootstrap_servers = \"x:9092\"\n{toml}"
                            );
                        }
                    }
                    parsed += 1;
                    if let Err(e) = parse_str(&toml, doc, &dummy) {
                        wrong.push(format!("{doc}: a toml block does not parse: {e}\n{b}"));
                    }
                    block = None;
                }
                (Some(b), _) => {
                    b.push_str(line);
                    b.push('\n');
                }
                (None, _) => {}
            }
        }
    }
    println!("{parsed} toml blocks parsed");
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert!(parsed >= 7, "only {parsed} toml blocks found");
}

/// The Kubernetes config validates with the variables its header's check command sets,
/// and that command sets every variable the file reads.
#[test]
fn the_kubernetes_config_validates_with_its_documented_check_command() {
    let text = read("deploy/kubernetes/strait.toml");
    let var = regex::Regex::new(r"([A-Z][A-Z0-9_]*)=\S+").unwrap();
    let header: String = text
        .lines()
        .take_while(|l| l.starts_with('#') || l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let set: BTreeMap<String, String> = var
        .captures_iter(&header)
        .map(|c| (c[1].to_owned(), "x:9092".to_owned()))
        .collect();
    let env = |name: &str| set.get(name).cloned();
    if let Err(e) = load_str(&text, "deploy/kubernetes/strait.toml", &env) {
        panic!("the check command in deploy/kubernetes/strait.toml's header fails:\n{e}");
    }
}

/// deploy/prometheus/alerts.yaml is a Prometheus rules file: groups of rules, each with
/// an alert name, an expression on Strait's metrics (checked against the registry by
/// `every_metric_the_docs_name_exists_with_its_labels`), a severity and a summary.
#[test]
fn the_alert_rules_are_a_prometheus_rules_file() {
    let text = read("deploy/prometheus/alerts.yaml");
    let doc: serde_norway::Value = serde_norway::from_str(&text).expect("YAML");
    let groups = doc["groups"].as_sequence().expect("groups");
    let mut alerts = BTreeSet::new();
    for g in groups {
        assert!(g["name"].as_str().is_some(), "a group without a name");
        for r in g["rules"].as_sequence().expect("rules") {
            let name = r["alert"].as_str().expect("alert name");
            let expr = r["expr"].as_str().expect("expr");
            assert!(expr.contains("strait_"), "{name}: {expr}");
            assert!(
                ["critical", "warning"].contains(&r["labels"]["severity"].as_str().unwrap_or("")),
                "{name}: severity"
            );
            assert!(
                r["annotations"]["summary"].as_str().is_some(),
                "{name}: summary"
            );
            if let Some(f) = r["for"].as_str() {
                assert!(humantime::parse_duration(f).is_ok(), "{name}: for {f}");
            }
            assert!(alerts.insert(name.to_owned()), "{name} twice");
        }
    }
    assert!(alerts.len() >= 5, "{alerts:?}");
}

/// deploy/grafana/strait.json is a Grafana dashboard: JSON with a title and panels, each
/// querying Strait's metrics (names and labels checked against the registry by
/// `every_metric_the_docs_name_exists_with_its_labels`).
#[test]
fn the_grafana_dashboard_is_a_dashboard_of_strait_s_metrics() {
    let doc: serde_json::Value =
        serde_json::from_str(&read("deploy/grafana/strait.json")).expect("JSON");
    assert!(doc["title"].as_str().is_some());
    let panels = doc["panels"].as_array().expect("panels");
    assert!(panels.len() >= 10, "{} panels", panels.len());
    for p in panels {
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{}", p["title"]);
        for t in targets {
            let expr = t["expr"].as_str().expect("expr");
            assert!(expr.contains("strait_"), "{}: {expr}", p["title"]);
        }
    }
}
