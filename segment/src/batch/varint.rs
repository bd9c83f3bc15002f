//! Kafka's zigzag varints (`ByteUtils.readVarint`/`writeVarint` and the `long` variants).
//!
//! A varint is the zigzag encoding `(v << 1) ^ (v >> 31)` written as unsigned LEB128: 7 bits per
//! byte, low bits first, high bit set on every byte but the last. An `int` takes at most 5 bytes,
//! a `long` at most 10; a longer encoding is corrupt, exactly as Kafka's reader says.

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The buffer ended inside the varint.
    Eof,
    /// More than 5 (int) or 10 (long) bytes.
    TooLong,
}

/// Reads a zigzag varint (Kafka `int`) from the front of `buf`; returns the value and the number
/// of bytes it took.
#[inline]
pub fn read_varint(buf: &[u8]) -> Result<(i32, usize), VarintError> {
    let mut value: u32 = 0;
    for (i, &b) in buf.iter().enumerate() {
        if i == 5 {
            return Err(VarintError::TooLong);
        }
        value |= ((b & 0x7f) as u32) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((((value >> 1) as i32) ^ -((value & 1) as i32), i + 1));
        }
    }
    if buf.len() >= 5 {
        Err(VarintError::TooLong)
    } else {
        Err(VarintError::Eof)
    }
}

/// Reads a zigzag varlong (Kafka `long`) from the front of `buf`.
#[inline]
pub fn read_varlong(buf: &[u8]) -> Result<(i64, usize), VarintError> {
    let mut value: u64 = 0;
    for (i, &b) in buf.iter().enumerate() {
        if i == 10 {
            return Err(VarintError::TooLong);
        }
        value |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((((value >> 1) as i64) ^ -((value & 1) as i64), i + 1));
        }
    }
    if buf.len() >= 10 {
        Err(VarintError::TooLong)
    } else {
        Err(VarintError::Eof)
    }
}

/// Appends the zigzag varint encoding of `v`.
#[inline]
pub fn write_varint(out: &mut Vec<u8>, v: i32) {
    write_unsigned(out, ((v << 1) ^ (v >> 31)) as u32 as u64);
}

/// Appends the zigzag varlong encoding of `v`.
#[inline]
pub fn write_varlong(out: &mut Vec<u8>, v: i64) {
    write_unsigned(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// Appends an unsigned LEB128 value (Kafka's `writeUnsignedVarint` for values below 2^32).
#[inline]
pub fn write_unsigned(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads an unsigned LEB128 `int` (Kafka's `readUnsignedVarint`), at most 5 bytes.
#[inline]
pub fn read_unsigned_varint(buf: &[u8]) -> Result<(u32, usize), VarintError> {
    let mut value: u32 = 0;
    for (i, &b) in buf.iter().enumerate() {
        if i == 5 {
            return Err(VarintError::TooLong);
        }
        value |= ((b & 0x7f) as u32) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    if buf.len() >= 5 {
        Err(VarintError::TooLong)
    } else {
        Err(VarintError::Eof)
    }
}

/// The number of bytes `write_varint(v)` takes (Kafka's `sizeOfVarint`).
#[inline]
pub fn size_of_varint(v: i32) -> usize {
    let lz = (((v << 1) ^ (v >> 31)) as u32).leading_zeros();
    ((38 - lz) / 7 + lz / 32) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings_match_kafka() {
        let cases: &[(i32, &[u8])] = &[
            (0, &[0x00]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (63, &[0x7e]),
            (-64, &[0x7f]),
            (64, &[0x80, 0x01]),
            (i32::MAX, &[0xfe, 0xff, 0xff, 0xff, 0x0f]),
            (i32::MIN, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        ];
        for &(v, bytes) in cases {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            assert_eq!(out, bytes, "encoding {v}");
            assert_eq!(read_varint(bytes), Ok((v, bytes.len())));
            assert_eq!(size_of_varint(v), bytes.len());
        }
    }

    #[test]
    fn overlong_and_truncated_varints_are_errors() {
        assert_eq!(
            read_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
            Err(VarintError::TooLong)
        );
        assert_eq!(read_varint(&[0x80, 0x80]), Err(VarintError::Eof));
        assert_eq!(read_varint(&[]), Err(VarintError::Eof));
        assert_eq!(read_varlong(&[0xff; 11]), Err(VarintError::TooLong));
        assert_eq!(read_varlong(&[0xff; 3]), Err(VarintError::Eof));
    }

    proptest! {
        #[test]
        fn varint_round_trips(v in any::<i32>()) {
            let mut out = Vec::new();
            write_varint(&mut out, v);
            prop_assert_eq!(out.len(), size_of_varint(v));
            prop_assert_eq!(read_varint(&out), Ok((v, out.len())));
        }

        #[test]
        fn varlong_round_trips(v in any::<i64>()) {
            let mut out = Vec::new();
            write_varlong(&mut out, v);
            prop_assert_eq!(read_varlong(&out), Ok((v, out.len())));
        }

        #[test]
        fn reading_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..12)) {
            let _ = read_varint(&bytes);
            let _ = read_varlong(&bytes);
            let _ = read_unsigned_varint(&bytes);
        }
    }
}
