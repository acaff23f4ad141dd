use super::*;

#[test]
fn reads_raw_snappy() {
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 7) as u8).collect();
    let raw = Encoder::new().compress_vec(&data).unwrap();
    assert_eq!(
        crate::compression::decompress(Compression::Snappy, &raw, data.len()).unwrap(),
        data
    );
    assert!(crate::compression::decompress(Compression::Snappy, &raw, data.len() - 1).is_err());
}

#[test]
fn writes_xerial_header_and_32k_blocks() {
    let data = vec![7u8; 70_000];
    let z = crate::compression::compress(Compression::Snappy, &data).unwrap();
    assert_eq!(&z[..8], &MAGIC);
    assert_eq!(&z[8..16], &[0, 0, 0, 1, 0, 0, 0, 1]);
    let first = i32::from_be_bytes(z[16..20].try_into().unwrap()) as usize;
    assert_eq!(decompress_len(&z[20..20 + first]).unwrap(), BLOCK);
}

#[test]
fn rejects_truncated_framing() {
    let z = crate::compression::compress(Compression::Snappy, &[1u8; 1000]).unwrap();
    for cut in [9, 17, z.len() - 1] {
        assert!(
            crate::compression::decompress(Compression::Snappy, &z[..cut], 1 << 20).is_err(),
            "cut at {cut}"
        );
    }
}
