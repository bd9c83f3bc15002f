//! The listener is PLAINTEXT only. Kafka's broker on such a listener still advertises
//! SaslHandshake (v0–1) and SaslAuthenticate (v0–2) and answers both `ILLEGAL_SASL_STATE`
//! (`KafkaApis.handleSaslHandshakeRequest`, `handleSaslAuthenticateRequest`), so that a client
//! configured for SASL fails with a clear `IllegalSaslStateException`. mirrorlog closed the
//! connection, and such a client reconnected for ever.

use crate::common;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

#[test]
fn sasl_handshake_and_authenticate_are_answered_illegal_sasl_state() {
    let dir = tempfile::tempdir().unwrap();
    let running = common::produce::running_with_topic(dir.path(), "t", 1);
    let advertised: Vec<_> = running
        .broker
        .api_versions()
        .into_iter()
        .filter(|(k, _, _)| matches!(k, ApiKey::SaslHandshake | ApiKey::SaslAuthenticate))
        .collect();
    assert_eq!(
        advertised,
        vec![
            (ApiKey::SaslHandshake, 0, 1),
            (ApiKey::SaslAuthenticate, 0, 2)
        ]
    );
    for version in 0..=1 {
        let r = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
        let resp: SaslHandshakeResponse =
            common::wire::call(running.addr, ApiKey::SaslHandshake, version, &r);
        assert_eq!(resp.error_code, ResponseError::IllegalSaslState.code());
        assert!(resp.mechanisms.is_empty());
    }
    for version in 0..=2 {
        let r = SaslAuthenticateRequest::default().with_auth_bytes(b"\0u\0p"[..].into());
        let resp: SaslAuthenticateResponse =
            common::wire::call(running.addr, ApiKey::SaslAuthenticate, version, &r);
        assert_eq!(resp.error_code, ResponseError::IllegalSaslState.code());
        assert!(resp.error_message.is_some());
    }
}
