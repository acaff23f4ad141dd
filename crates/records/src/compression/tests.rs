use super::*;
use proptest::prelude::*;

fn sample(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8 ^ (i / 997) as u8).collect()
}

#[test]
fn round_trip_every_codec_and_size() {
    for codec in Compression::ALL {
        for n in [0, 1, 100, 32 << 10, (32 << 10) + 1, 200_000] {
            let data = sample(n);
            let z = compress(codec, &data).unwrap();
            assert_eq!(decompress(codec, &z, n).unwrap(), data, "{codec} {n}");
        }
    }
}

#[test]
fn cap_is_enforced_for_every_codec() {
    let data = vec![0u8; 1 << 20];
    for codec in Compression::ALL {
        let z = compress(codec, &data).unwrap();
        assert_eq!(decompress(codec, &z, 1 << 20).unwrap().len(), 1 << 20);
        let err = decompress(codec, &z, (1 << 20) - 1).unwrap_err();
        assert!(
            matches!(err, Error::DecompressedTooLarge { cap, .. } if cap == (1 << 20) - 1),
            "{codec}: {err}"
        );
    }
}

#[test]
fn garbage_is_an_error() {
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        assert!(decompress(codec, b"definitely not compressed data", 1 << 20).is_err());
    }
}

proptest! {
    #[test]
    fn codecs_round_trip(data in proptest::collection::vec(any::<u8>(), 0..5000), codec in 0u8..5) {
        let codec = Compression::from_id(codec).unwrap();
        let z = compress(codec, &data).unwrap();
        prop_assert_eq!(decompress(codec, &z, data.len()).unwrap(), data);
    }

    #[test]
    fn decompress_never_panics(data in proptest::collection::vec(any::<u8>(), 0..600), codec in 0u8..5) {
        let codec = Compression::from_id(codec).unwrap();
        let _ = decompress(codec, &data, 1 << 16);
    }
}
