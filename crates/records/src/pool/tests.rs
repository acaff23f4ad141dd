use super::*;

#[test]
fn frozen_buffers_come_back_when_the_last_reference_drops() {
    let pool = BufferPool::new(1 << 20);
    let mut buf = pool.take(100);
    let capacity = buf.capacity();
    assert_eq!(capacity, GRANULE);
    buf.extend_from_slice(b"merged batch");
    let bytes = pool.freeze(buf);
    let slice = bytes.slice(7..);
    drop(bytes);
    assert_eq!(pool.idle_bytes(), 0, "a slice still refers to the buffer");
    assert_eq!(&slice[..], b"batch");
    drop(slice);
    assert_eq!(pool.idle_bytes(), capacity);
    let again = pool.take(100);
    assert!(again.is_empty());
    assert_eq!(again.capacity(), capacity, "the same allocation, emptied");
    assert_eq!(pool.idle_bytes(), 0);
}

#[test]
fn keeps_buffers_up_to_the_byte_cap_and_lends_the_smallest_that_fits() {
    let pool = BufferPool::new(3 * GRANULE);
    pool.put(Vec::with_capacity(2 * GRANULE));
    pool.put(Vec::with_capacity(GRANULE));
    pool.put(Vec::with_capacity(GRANULE));
    assert_eq!(
        pool.idle_bytes(),
        3 * GRANULE,
        "the third buffer is over the cap"
    );
    assert_eq!(pool.take(10).capacity(), GRANULE);
    assert_eq!(pool.take(GRANULE + 1).capacity(), 2 * GRANULE);
    assert_eq!(pool.idle_bytes(), 0);
}

#[test]
fn a_buffer_more_than_twice_too_large_is_not_lent() {
    let pool = BufferPool::new(16 * GRANULE);
    pool.put(Vec::with_capacity(8 * GRANULE));
    assert_eq!(pool.take(GRANULE).capacity(), GRANULE);
    assert_eq!(pool.idle_bytes(), 8 * GRANULE);
}

#[test]
fn the_default_pool_keeps_nothing() {
    let pool = BufferPool::default();
    pool.put(Vec::with_capacity(10));
    drop(pool.freeze(vec![1, 2, 3]));
    assert_eq!(pool.idle_bytes(), 0);
    assert!(pool.take(1).capacity() >= 1);
}
