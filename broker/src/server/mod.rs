//! The listener and request framing: `int32 size` + request header + body in, `int32 size` +
//! response header + body out, answered in order per connection.
//!
//! The server knows nothing of what requests mean: it decodes the header and body with the
//! `kafka-protocol` crate and hands them to a [`Handler`].

use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};
use std::net::SocketAddr;

pub mod frame;
pub mod listener;
mod signals;

pub use listener::{Server, ServerConfig, ShutdownHandle};
pub use signals::shutdown_on_signals;

/// Who sent a request.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// The connection's peer.
    pub peer: SocketAddr,
    /// A number unique to the connection for the life of the process.
    pub connection_id: u64,
    /// The header's `client_id`.
    pub client_id: Option<String>,
    /// The request's API key.
    pub api_key: ApiKey,
    /// The request's API version.
    pub api_version: i16,
    /// The request's correlation id.
    pub correlation_id: i32,
}

/// What the broker does with decoded requests.
pub trait Handler: Send + Sync + 'static {
    /// Handles one request and returns its response body, or `None` when Kafka sends no response
    /// (Produce with acks=0). May block (long-poll fetch, JoinGroup): the connection's next
    /// request waits, as with Kafka, so responses stay in request order.
    fn handle(
        &self,
        ctx: &RequestContext,
        header: &RequestHeader,
        request: RequestKind,
    ) -> Option<ResponseKind>;

    /// The versions of `api` this broker implements (advertised in ApiVersions), `None` if the
    /// API is not implemented.
    fn supported_versions(&self, api: ApiKey) -> Option<(i16, i16)>;
}
