//! Data written to the scratch files: pseudo-random bytes (so compressing
//! or deduplicating storage cannot shortcut the work) and, with
//! `verify=on`, a self-describing per-block pattern.
//!
//! A verified block is a 32-byte header followed by a payload:
//!
//! ```text
//! bytes 0..8    MAGIC ("bnchsuit", little endian)
//! bytes 8..16   the block's byte offset in its file
//! bytes 16..24  the block's generation: 0 from the layout, +1 per rewrite
//! bytes 24..32  checksum of the payload (64-bit FNV-1a over 8-byte words)
//! bytes 32..    pseudo-random payload seeded by (offset, generation)
//! ```
//!
//! A read is checked in that order, and the first mismatch becomes a
//! `BenchError::Verify` naming the offset, what was expected and what was
//! found: a wrong magic (never written, or overwritten by something else),
//! a wrong offset (a misdirected write or read), a wrong generation (a lost
//! or stale write), a wrong checksum (corrupted payload).

use benchsuite_core::BenchError;

/// The header magic.
pub const MAGIC: u64 = u64::from_le_bytes(*b"bnchsuit");
/// Header length in bytes.
pub const HEADER: usize = 32;

/// A small, fast generator (SplitMix64): offsets, read/write choices and
/// buffer contents. Not cryptographic, and need not be.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias is below
    /// n / 2^64, far under anything measurable). `n` must be nonzero.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let tail = chunks.into_remainder();
        let last = self.next_u64().to_le_bytes();
        let n = tail.len();
        tail.copy_from_slice(&last[..n]);
    }
}

/// Makes a write buffer unique without rewriting it: stamps the first 8
/// bytes of every 512 B sector with its file offset mixed with `stamp` (a
/// per-thread write counter). Like fio's default `scramble_buffers=1`, this
/// keeps deduplicating or compressing storage from storing repeated writes
/// of the same buffer as one, at a cost of one store per sector.
pub fn scramble(block: &mut [u8], offset: u64, stamp: u64) {
    let salt = stamp.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xA5A5_5A5A_0F0F_F0F0;
    for (i, s) in block.chunks_mut(512).enumerate() {
        let v = (offset + i as u64 * 512) ^ salt;
        let k = s.len().min(8);
        s[..k].copy_from_slice(&v.to_le_bytes()[..k]);
    }
}

/// 64-bit FNV-1a over little-endian 8-byte words (then the tail bytes).
pub fn checksum(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    for &b in chunks.remainder() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn seed(offset: u64, generation: u64) -> u64 {
    offset.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ generation.rotate_left(32) ^ MAGIC
}

/// Writes the verify pattern of the block at `offset`, generation
/// `generation`, into `block` (the whole buffer is the block).
pub fn fill_block(block: &mut [u8], offset: u64, generation: u64) {
    let (head, payload) = block.split_at_mut(HEADER.min(block.len()));
    Rng::new(seed(offset, generation)).fill(payload);
    let sum = checksum(payload);
    let mut h = [0u8; HEADER];
    h[0..8].copy_from_slice(&MAGIC.to_le_bytes());
    h[8..16].copy_from_slice(&offset.to_le_bytes());
    h[16..24].copy_from_slice(&generation.to_le_bytes());
    h[24..32].copy_from_slice(&sum.to_le_bytes());
    let n = head.len();
    head.copy_from_slice(&h[..n]);
}

fn word(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// Checks a block read back from `offset` of `file` (a description such as
/// "thread 0's file") against the pattern of `generation`.
pub fn check_block(
    block: &[u8],
    offset: u64,
    generation: u64,
    file: &str,
) -> Result<(), BenchError> {
    let fail = |what: String| {
        Err(BenchError::Verify(format!(
            "{file}, block at offset {offset}: {what}"
        )))
    };
    if block.len() < HEADER {
        return fail(format!(
            "block of {} B is shorter than the header",
            block.len()
        ));
    }
    let magic = word(block, 0);
    if magic != MAGIC {
        return fail(format!(
            "expected magic 0x{MAGIC:016x}, actual 0x{magic:016x} (the block was never written with the pattern, or was overwritten)"
        ));
    }
    let at = word(block, 8);
    if at != offset {
        return fail(format!(
            "expected offset {offset} in the header, actual {at} (misdirected write or read)"
        ));
    }
    let g = word(block, 16);
    if g != generation {
        return fail(format!(
            "expected generation {generation}, actual {g} (a lost or stale write)"
        ));
    }
    let stored = word(block, 24);
    let actual = checksum(&block[HEADER..]);
    if stored != actual {
        return fail(format!(
            "payload checksum expected 0x{stored:016x} (stored in the header), actual 0x{actual:016x} (corrupted data)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrambled_buffers_differ_per_sector_and_per_write() {
        let mut a = vec![7u8; 2048];
        let mut b = a.clone();
        scramble(&mut a, 4096, 1);
        scramble(&mut b, 4096, 2);
        assert_ne!(a, b);
        let sectors: Vec<&[u8]> = a.chunks(512).collect();
        assert!(sectors.windows(2).all(|w| w[0] != w[1]));
        // Only the first 8 bytes of each sector change.
        assert!(a.chunks(512).all(|s| s[8..].iter().all(|&x| x == 7)));
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut r = Rng::new(1);
        let mut seen = [false; 7];
        for _ in 0..1000 {
            let v = r.below(7);
            assert!(v < 7);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn a_written_block_verifies_and_any_damage_is_named() {
        let mut b = vec![0u8; 4096];
        fill_block(&mut b, 8192, 3);
        check_block(&b, 8192, 3, "f").unwrap();

        let e = check_block(&b, 4096, 3, "f").unwrap_err().to_string();
        assert!(
            e.contains("offset 4096") && e.contains("actual 8192"),
            "{e}"
        );
        let e = check_block(&b, 8192, 4, "f").unwrap_err().to_string();
        assert!(e.contains("expected generation 4, actual 3"), "{e}");
        let mut c = b.clone();
        c[1000] ^= 1;
        let e = check_block(&c, 8192, 3, "f").unwrap_err().to_string();
        assert!(e.contains("checksum") && e.contains("offset 8192"), "{e}");
        let e = check_block(&[0u8; 4096], 0, 0, "f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("magic"), "{e}");
        assert!(e.starts_with("verification failed"), "{e}");
    }

    #[test]
    fn payloads_differ_between_offsets_and_generations() {
        let mut a = vec![0u8; 512];
        let mut b = vec![0u8; 512];
        fill_block(&mut a, 0, 0);
        fill_block(&mut b, 512, 0);
        assert_ne!(a[HEADER..], b[HEADER..]);
        fill_block(&mut b, 0, 1);
        assert_ne!(a[HEADER..], b[HEADER..]);
        let mut odd = vec![0u8; 1001];
        fill_block(&mut odd, 1001, 0);
        check_block(&odd, 1001, 0, "f").unwrap();
    }
}
