//! CRC-32C (Castagnoli), the checksum of Kafka's v2 record batches and producer snapshots.
//!
//! Every crate of the workspace — and every benchmark baseline that checksums bytes — calls these
//! two functions, so what is compared always runs the same implementation. They use the
//! `crc-fast` crate, which picks its kernel at run time: on x86_64 with AVX-512 and VPCLMULQDQ
//! (this project's benchmark VM) a carry-less-multiply fusion that checksums a hot 16 KiB batch
//! at about 55 GB/s, against about 22 GB/s for the SSE4.2 `crc32` instruction the `crc32c` crate
//! uses; with only SSE4.2 and PCLMULQDQ, or on aarch64, its other fused kernels; elsewhere a table.
//! The `crc32c` crate stays as the independent oracle of the property tests below.

/// The CRC-32C of `data` (initial value and final XOR `0xFFFF_FFFF`, reflected: Kafka's
/// `Crc32C.compute`).
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc_fast::crc32_iscsi(data)
}

/// Continues a CRC-32C: `crc32c_append(crc32c(a), b) == crc32c(a ++ b)`, for checksumming a
/// stream in pieces.
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    // crc-fast's digest state is the register before the final XOR.
    let mut digest = crc_fast::Digest::new_with_init_state(
        crc_fast::CrcAlgorithm::Crc32Iscsi,
        u64::from(crc ^ 0xFFFF_FFFF),
    );
    digest.update(data);
    digest.finalize() as u32
}

/// The kernel [`crc32c`] runs on this CPU, as `crc-fast` names it (e.g.
/// `x86_64-avx512-vpclmulqdq`): benchmarks report it beside their checksum rates.
pub fn kernel() -> String {
    crc_fast::get_calculator_target(crc_fast::CrcAlgorithm::Crc32Iscsi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_check_value_of_the_catalogue() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c_append(crc32c(b"1234"), b"56789"), 0xE306_9283);
        assert_eq!(crc32c_append(0, b"123456789"), 0xE306_9283);
    }

    proptest! {
        // Lengths across every kernel threshold (small tails, 64/256-byte blocks, the 16 KiB
        // batches the log writes) and unaligned starts.
        #[test]
        fn equals_the_crc32c_crate(
            data in proptest::collection::vec(any::<u8>(), 0..20_000),
            start in 0usize..64,
            split in 0usize..20_000,
        ) {
            let data = &data[start.min(data.len())..];
            prop_assert_eq!(crc32c(data), ::crc32c::crc32c(data));
            let split = split.min(data.len());
            let (a, b) = data.split_at(split);
            prop_assert_eq!(crc32c_append(crc32c(a), b), ::crc32c::crc32c(data));
            prop_assert_eq!(
                crc32c_append(0x1234_5678, data),
                ::crc32c::crc32c_append(0x1234_5678, data)
            );
        }
    }
}
