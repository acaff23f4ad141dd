//! Produces N records (keys, values, headers, timestamps) with the idempotent record
//! producer, fetches them back and checks every one.
//!
//! ```text
//! cargo run --release -p strait-client --example produce_fetch -- \
//!     --bootstrap 127.0.0.1:9092 --topic t --records 1000000 --codec lz4
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strait_client::{
    Client, ClientConfig, NewTopic, PartitionConsumer, ProducerRecord, RecordProducer,
};
use strait_records::Compression;

struct Args {
    bootstrap: String,
    topic: String,
    records: usize,
    codec: Compression,
}

fn parse_args() -> Result<Args, String> {
    let mut bootstrap = None;
    let mut topic = None;
    let mut records = None;
    let mut codec = Compression::None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--bootstrap" => bootstrap = Some(val()?),
            "--topic" => topic = Some(val()?),
            "--records" => records = Some(val()?.parse().map_err(|e| format!("--records: {e}"))?),
            "--codec" => {
                let v = val()?;
                codec = Compression::ALL
                    .into_iter()
                    .find(|c| c.name() == v)
                    .ok_or(format!("unknown codec {v} (none, gzip, snappy, lz4, zstd)"))?;
            }
            "-h" | "--help" => {
                return Err("usage: produce_fetch --bootstrap HOST:PORT --topic T --records N [--codec lz4]".into());
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args {
        bootstrap: bootstrap.ok_or("--bootstrap is required")?,
        topic: topic.ok_or("--topic is required")?,
        records: records.ok_or("--records is required")?,
        codec,
    })
}

const BASE_TS: i64 = 1_700_000_000_000;

fn record(i: usize) -> ProducerRecord {
    ProducerRecord::new(
        format!("key-{i}"),
        format!("value-{i}-{}", "x".repeat(i % 32)),
    )
    .with_header("seq", Bytes::from(i.to_string()))
    .with_header("kind", Bytes::from_static(b"example"))
    .with_timestamp(BASE_TS + i as i64)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::connect(ClientConfig::new([args.bootstrap.clone()])).await?;
    let meta = client.metadata(Some(&[&args.topic])).await?;
    if !meta.topics.contains_key(&args.topic) {
        for (name, r) in client
            .create_topics(&[NewTopic::new(&args.topic, 1)], Duration::from_secs(10))
            .await?
        {
            match r {
                Err(e) if e.kafka_code() != Some(36) => return Err(e.into()),
                _ => println!("created topic {name}"),
            }
        }
    }
    let (topic, partition) = (args.topic.as_str(), 0);

    let t0 = Instant::now();
    let producer = RecordProducer::new(client.clone(), args.codec).await?;
    let mut acks = Vec::new();
    const CHUNK: usize = 10_000;
    for start in (0..args.records).step_by(CHUNK) {
        let end = (start + CHUNK).min(args.records);
        let recs: Vec<ProducerRecord> = (start..end).map(record).collect();
        for a in producer.send(topic, partition, &recs).await? {
            acks.push((start, a));
        }
    }
    let mut first_offset = None;
    for (start, a) in acks {
        let ack = a.wait().await?;
        if start == 0 {
            first_offset = Some(ack.base_offset);
        }
    }
    let produce_time = t0.elapsed();
    let first = first_offset.unwrap_or(0).max(0);

    let t1 = Instant::now();
    let mut consumer = PartitionConsumer::new(client.clone(), topic, partition, first);
    let mut fetched = 0usize;
    while fetched < args.records {
        let recs = consumer.poll().await?;
        for r in recs {
            if fetched >= args.records {
                break;
            }
            let want = record(fetched);
            let headers: Vec<(Bytes, Option<Bytes>)> = want
                .headers
                .iter()
                .map(|(k, v)| (Bytes::from(k.clone()), v.clone()))
                .collect();
            if r.offset != first + fetched as i64
                || r.key != want.key
                || r.value != want.value
                || r.headers != headers
                || Some(r.timestamp) != want.timestamp
            {
                return Err(format!("record {fetched} differs: got {r:?}").into());
            }
            fetched += 1;
        }
    }
    let fetch_time = t1.elapsed();
    println!("produced {} fetched {fetched}", args.records);
    println!(
        "codec {} produce {:.2?} fetch {:.2?}",
        args.codec.name(),
        produce_time,
        fetch_time
    );
    Ok(())
}
