//! The flexible-version primitives of the Kafka protocol that the mirror RPCs use, read and
//! written by hand (see the parent module for why): fixed-width big-endian integers, unsigned
//! varints, compact (nullable) strings, compact (nullable) arrays, UUIDs and the tagged-field
//! section.
//!
//! A reader never allocates more than the bytes it has left: a compact array announcing more
//! elements than bytes remain is refused before anything is reserved (every element takes at
//! least one byte), and a string's length is checked against the remaining bytes first.

use bytes::{BufMut, BytesMut};

/// Why a mirror RPC body does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} at byte {position}: {reason}")]
pub struct CodecError {
    /// The field being read.
    pub field: &'static str,
    /// Where in the body it starts.
    pub position: usize,
    /// What is wrong.
    pub reason: String,
}

/// A cursor over one request or response body.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Reads `buf` from its start.
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The read position.
    pub fn position(&self) -> usize {
        self.pos
    }

    fn err(&self, field: &'static str, reason: impl Into<String>) -> CodecError {
        CodecError {
            field,
            position: self.pos,
            reason: reason.into(),
        }
    }

    /// The next `n` bytes.
    ///
    /// # Errors
    /// Fewer than `n` bytes remain.
    pub fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], CodecError> {
        if n > self.remaining() {
            return Err(self.err(
                field,
                format!("needs {n} bytes, {} remain", self.remaining()),
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], CodecError> {
        let s = self.take(field, N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// An unsigned varint of at most 5 bytes (a u32).
    ///
    /// # Errors
    /// Truncated, or longer than 5 bytes / above u32::MAX.
    pub fn uvarint(&mut self, field: &'static str) -> Result<u32, CodecError> {
        let start = self.pos;
        let mut value: u64 = 0;
        for i in 0..5 {
            let b = self.take(field, 1)?[0];
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return u32::try_from(value).map_err(|_| CodecError {
                    field,
                    position: start,
                    reason: "unsigned varint above 2^32-1".into(),
                });
            }
        }
        Err(CodecError {
            field,
            position: start,
            reason: "unsigned varint longer than 5 bytes".into(),
        })
    }

    /// Reads a compact length (`uvarint n+1`, 0 = null), checked against the bytes left when
    /// each unit takes at least `min_unit_bytes`.
    fn compact_len(
        &mut self,
        field: &'static str,
        unit: &str,
    ) -> Result<Option<usize>, CodecError> {
        let n = self.uvarint(field)?;
        if n == 0 {
            return Ok(None);
        }
        let len = (n - 1) as usize;
        // Every unit (a byte of a string, an element of an array) takes at least one byte.
        if len > self.remaining() {
            return Err(self.err(
                field,
                format!(
                    "announces {len} {unit} but only {} bytes remain",
                    self.remaining()
                ),
            ));
        }
        Ok(Some(len))
    }

    /// A compact nullable string.
    ///
    /// # Errors
    /// Truncated or invalid UTF-8.
    pub fn nullable_string(&mut self, field: &'static str) -> Result<Option<String>, CodecError> {
        let Some(len) = self.compact_len(field, "bytes")? else {
            return Ok(None);
        };
        let at = self.pos;
        let bytes = self.take(field, len)?;
        std::str::from_utf8(bytes)
            .map(|s| Some(s.to_string()))
            .map_err(|e| CodecError {
                field,
                position: at,
                reason: format!("invalid UTF-8: {e}"),
            })
    }

    /// A compact string that may not be null.
    ///
    /// # Errors
    /// Null, truncated or invalid UTF-8.
    pub fn string(&mut self, field: &'static str) -> Result<String, CodecError> {
        let at = self.pos;
        self.nullable_string(field)?.ok_or(CodecError {
            field,
            position: at,
            reason: "null where a string is required".into(),
        })
    }

    /// A compact nullable array's element count.
    ///
    /// # Errors
    /// Truncated, or more elements than bytes remain.
    pub fn array_len(&mut self, field: &'static str) -> Result<Option<usize>, CodecError> {
        self.compact_len(field, "elements")
    }

    /// Skips the tagged-field section, calling `known(tag, reader)` for each field; `known`
    /// returns `false` for a tag it does not know (the field is skipped, as Kafka does). A known
    /// field must consume its whole value.
    ///
    /// # Errors
    /// Truncated, tags out of order or repeated, or a known field that does not decode.
    pub fn tagged_fields(
        &mut self,
        field: &'static str,
        mut known: impl FnMut(u32, &mut Reader<'a>) -> Result<bool, CodecError>,
    ) -> Result<(), CodecError> {
        let Some(count) = self.compact_len_plain(field)? else {
            return Ok(());
        };
        let mut last: Option<u32> = None;
        for _ in 0..count {
            let tag = self.uvarint(field)?;
            if last.is_some_and(|l| tag <= l) {
                return Err(self.err(field, format!("tag {tag} out of order or repeated")));
            }
            last = Some(tag);
            let size = self.uvarint(field)? as usize;
            let start = self.pos;
            let value = self.take(field, size)?;
            let mut sub = Reader {
                buf: &self.buf[..start + size],
                pos: start,
            };
            debug_assert_eq!(sub.remaining(), value.len());
            if known(tag, &mut sub)? && sub.remaining() != 0 {
                return Err(CodecError {
                    field,
                    position: sub.pos,
                    reason: format!("{} bytes left in tagged field {tag}", sub.remaining()),
                });
            }
        }
        Ok(())
    }

    /// The tagged-field count: a plain uvarint, bounded by the bytes left (each field takes at
    /// least two bytes, tag and size).
    fn compact_len_plain(&mut self, field: &'static str) -> Result<Option<usize>, CodecError> {
        let n = self.uvarint(field)? as usize;
        if n.saturating_mul(2) > self.remaining() {
            return Err(self.err(
                field,
                format!(
                    "announces {n} tagged fields but only {} bytes remain",
                    self.remaining()
                ),
            ));
        }
        Ok(if n == 0 { None } else { Some(n) })
    }

    /// Refuses trailing bytes after a whole body.
    ///
    /// # Errors
    /// Bytes remain.
    pub fn finish(&self, what: &'static str) -> Result<(), CodecError> {
        if self.remaining() != 0 {
            return Err(self.err(
                what,
                format!("{} bytes after the end of the body", self.remaining()),
            ));
        }
        Ok(())
    }
}

/// A value with a flexible-version wire form.
pub trait Wire: Sized {
    /// Appends the value.
    fn write(&self, out: &mut BytesMut);
    /// Reads one value.
    ///
    /// # Errors
    /// As the primitives of [`Reader`].
    fn read(r: &mut Reader<'_>, field: &'static str) -> Result<Self, CodecError>;
}

/// Appends an unsigned varint.
pub fn put_uvarint(out: &mut BytesMut, mut v: u32) {
    while v >= 0x80 {
        out.put_u8((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.put_u8(v as u8);
}

/// Appends a compact length (`n + 1`; `None` = null, written 0).
fn put_compact_len(out: &mut BytesMut, n: Option<usize>) {
    match n {
        None => put_uvarint(out, 0),
        Some(n) => put_uvarint(
            out,
            u32::try_from(n + 1).expect("a compact array or string fits u32"),
        ),
    }
}

macro_rules! fixed {
    ($t:ty, $put:ident) => {
        impl Wire for $t {
            fn write(&self, out: &mut BytesMut) {
                out.$put(*self);
            }
            fn read(r: &mut Reader<'_>, field: &'static str) -> Result<Self, CodecError> {
                Ok(<$t>::from_be_bytes(r.array(field)?))
            }
        }
    };
}
fixed!(i8, put_i8);
fixed!(i16, put_i16);
fixed!(i32, put_i32);
fixed!(i64, put_i64);

impl Wire for bool {
    fn write(&self, out: &mut BytesMut) {
        out.put_u8(u8::from(*self));
    }
    fn read(r: &mut Reader<'_>, field: &'static str) -> Result<Self, CodecError> {
        let at = r.position();
        match r.take(field, 1)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(CodecError {
                field,
                position: at,
                reason: format!("boolean byte {b}, expected 0 or 1"),
            }),
        }
    }
}

/// A UUID (topic id), 16 bytes.
impl Wire for [u8; 16] {
    fn write(&self, out: &mut BytesMut) {
        out.put_slice(self);
    }
    fn read(r: &mut Reader<'_>, field: &'static str) -> Result<Self, CodecError> {
        r.array(field)
    }
}

impl Wire for String {
    fn write(&self, out: &mut BytesMut) {
        put_compact_len(out, Some(self.len()));
        out.put_slice(self.as_bytes());
    }
    fn read(r: &mut Reader<'_>, field: &'static str) -> Result<Self, CodecError> {
        r.string(field)
    }
}

impl Wire for Option<String> {
    fn write(&self, out: &mut BytesMut) {
        match self {
            None => put_compact_len(out, None),
            Some(s) => s.write(out),
        }
    }
    fn read(r: &mut Reader<'_>, field: &'static str) -> Result<Self, CodecError> {
        r.nullable_string(field)
    }
}

/// A compact array (never null: a null array reads as an error).
impl<T: Wire> Wire for Vec<T> {
    fn write(&self, out: &mut BytesMut) {
        put_compact_len(out, Some(self.len()));
        for v in self {
            v.write(out);
        }
    }
    fn read(r: &mut Reader<'_>, field: &'static str) -> Result<Self, CodecError> {
        let at = r.position();
        let Some(n) = r.array_len(field)? else {
            return Err(CodecError {
                field,
                position: at,
                reason: "null where an array is required".into(),
            });
        };
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(T::read(r, field)?);
        }
        Ok(v)
    }
}

/// A compact nullable array (`None` = null).
impl<T: Wire> Wire for Option<Vec<T>> {
    fn write(&self, out: &mut BytesMut) {
        match self {
            None => put_compact_len(out, None),
            Some(v) => v.write(out),
        }
    }
    fn read(r: &mut Reader<'_>, field: &'static str) -> Result<Self, CodecError> {
        let Some(n) = r.array_len(field)? else {
            return Ok(None);
        };
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(T::read(r, field)?);
        }
        Ok(Some(v))
    }
}

/// Appends one tagged field: tag, size, value.
pub fn put_tagged<T: Wire>(out: &mut BytesMut, tag: u32, value: &T) {
    let mut v = BytesMut::new();
    value.write(&mut v);
    put_uvarint(out, tag);
    put_uvarint(
        out,
        u32::try_from(v.len()).expect("a tagged field fits u32"),
    );
    out.put_slice(&v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uvarint_round_trips_at_the_byte_boundaries() {
        for v in [0u32, 1, 127, 128, 16_383, 16_384, u32::MAX] {
            let mut b = BytesMut::new();
            put_uvarint(&mut b, v);
            let mut r = Reader::new(&b);
            assert_eq!(r.uvarint("v").unwrap(), v);
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn uvarint_longer_than_five_bytes_is_refused() {
        let b = [0x80u8, 0x80, 0x80, 0x80, 0x80, 0x01];
        assert!(Reader::new(&b).uvarint("v").is_err());
        let over = [0xffu8, 0xff, 0xff, 0xff, 0x7f];
        assert!(Reader::new(&over).uvarint("v").is_err());
    }

    #[test]
    fn an_array_announcing_more_elements_than_bytes_is_refused_before_allocating() {
        // 2^32-2 elements announced, two bytes follow.
        let mut b = BytesMut::new();
        put_uvarint(&mut b, u32::MAX);
        b.put_slice(&[1, 2]);
        let e = <Vec<i32>>::read(&mut Reader::new(&b), "topics").unwrap_err();
        assert_eq!(e.field, "topics");
        assert!(e.reason.contains("announces"), "{e}");
    }

    #[test]
    fn a_string_longer_than_the_body_is_refused() {
        let mut b = BytesMut::new();
        put_uvarint(&mut b, 100);
        b.put_slice(b"abc");
        assert!(String::read(&mut Reader::new(&b), "name").is_err());
    }

    #[test]
    fn null_string_is_refused_where_required_and_kept_where_nullable() {
        let b = [0u8];
        assert!(String::read(&mut Reader::new(&b), "name").is_err());
        assert_eq!(
            <Option<String>>::read(&mut Reader::new(&b), "msg").unwrap(),
            None
        );
    }

    #[test]
    fn booleans_other_than_zero_or_one_are_refused() {
        assert!(bool::read(&mut Reader::new(&[2]), "b").is_err());
    }

    #[test]
    fn unknown_tagged_fields_are_skipped() {
        let mut b = BytesMut::new();
        put_uvarint(&mut b, 1);
        put_tagged(&mut b, 7, &"x".to_string());
        let mut r = Reader::new(&b);
        r.tagged_fields("tags", |_, _| Ok(false)).unwrap();
        assert_eq!(r.remaining(), 0);
    }
}
