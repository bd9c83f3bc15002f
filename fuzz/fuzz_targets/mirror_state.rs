//! Fuzzes the decoders of `__mirror_state` records, which a destination broker reads back at
//! every start to restore its mirror partitions: a key (type, mirror name, topic id, partition)
//! and a value (state, epochs, failure with reason), or a start intent's key and value (the
//! topic before a start, its configs, each partition's state). Anything decoded must encode and
//! decode back to itself.
//!
//! Input: a 2-byte key length, the key, then the value.
//! No input may panic, hang or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mirrorlog_mirror::state::{
    decode_intent_key, decode_intent_value, decode_key, decode_value, encode_intent_key,
    encode_intent_value, encode_key, encode_value,
};

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let key_len = (u16::from_be_bytes([data[0], data[1]]) as usize).min(data.len() - 2);
    let (key_bytes, value_bytes) = data[2..].split_at(key_len);
    if let Ok(key) = decode_intent_key(key_bytes) {
        assert_eq!(
            decode_intent_key(&encode_intent_key(&key)).expect("an encoded key decodes"),
            key
        );
        if let Ok(intent) = decode_intent_value(&key, value_bytes) {
            let again = decode_intent_value(&key, &encode_intent_value(&intent))
                .expect("an encoded intent decodes");
            assert_eq!(again, intent);
        }
        return;
    }
    let Ok(key) = decode_key(key_bytes) else {
        return;
    };
    assert_eq!(
        decode_key(&encode_key(&key)).expect("an encoded key decodes"),
        key
    );
    if let Ok(state) = decode_value(&key, value_bytes) {
        let again = decode_value(&key, &encode_value(&state)).expect("an encoded value decodes");
        assert_eq!(again, state);
    }
});
