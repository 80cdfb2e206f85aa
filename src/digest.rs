//! A short, stable fingerprint of bytes: FNV-1a 64 (Fowler, Noll and Vo; the offset basis and
//! prime of the IETF draft-eastlake-fnv). Not for security: for telling apart what should be
//! the same (two ranks' sweep options, two traffic files of one name) without carrying it whole.

const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// The FNV-1a 64 hash of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    (bytes.iter()).fold(OFFSET_BASIS, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
