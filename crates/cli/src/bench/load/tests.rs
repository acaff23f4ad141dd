use super::*;

#[test]
fn pool_values_have_the_size_and_compress_partly() {
    let pool = PayloadPool::new(1024, 64, 1);
    let mut all = Vec::new();
    for i in 0..64 {
        let (k, v) = pool.get(i);
        assert_eq!(v.len(), 1024);
        assert!(k.starts_with(b"user-"));
        assert!(v.starts_with(b"{\"id\":\"") && v.ends_with(b"\"}"));
        all.extend_from_slice(&v);
    }
    let distinct: std::collections::HashSet<_> = (0..64).map(|i| pool.get(i).1).collect();
    assert_eq!(distinct.len(), 64);
    // Semi-compressible: a real codec shrinks it, but not to nothing.
    let batch = {
        let mut b = strait_records::BatchBuilder::new(Compression::Lz4);
        for i in 0..64 {
            let (k, v) = pool.get(i);
            b.push(0, Some(&k), Some(&v), &[]).expect("push");
        }
        b.build().expect("build")
    };
    let ratio = all.len() as f64 / batch.as_bytes().len() as f64;
    assert!((1.3..6.0).contains(&ratio), "lz4 ratio {ratio}");
    // Tiny sizes still give the exact size.
    assert_eq!(PayloadPool::new(10, 2, 1).get(0).1.len(), 10);
}
