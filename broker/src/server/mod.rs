//! The listener and request framing: `int32 size` + request header + body in, `int32 size` +
//! response header + body out, answered in order per connection (a handler may finish a
//! response later, see [`Reply`], while the connection's next requests are handled).
//!
//! The server knows nothing of what requests mean: it decodes the header and body with the
//! `kafka-protocol` crate and hands them to a [`Handler`].

use crate::mirror_rpc::{MirrorApiKey, MirrorRequest, MirrorResponse};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};
use std::net::SocketAddr;

pub mod frame;
pub mod listener;
mod signals;

pub use listener::{ListenerState, Server, ServerConfig, ShutdownHandle};
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

    /// As [`handle`](Self::handle), but may leave the response to finish later: a
    /// [`Reply::Later`] runs on the connection's writer thread while the connection reads and handles its next
    /// requests; responses still go out in request order. The default answers at once.
    fn handle_pipelined(
        &self,
        ctx: &RequestContext,
        header: &RequestHeader,
        request: RequestKind,
    ) -> Reply {
        self.handle(ctx, header, request).into()
    }

    /// The versions of `api` this broker implements (advertised in ApiVersions), `None` if the
    /// API is not implemented.
    fn supported_versions(&self, api: ApiKey) -> Option<(i16, i16)>;

    /// The versions of a mirror RPC (API keys 94–106) this handler serves; `None` (the
    /// default): a request with that key closes the connection.
    fn mirror_versions(&self, _api: MirrorApiKey) -> Option<(i16, i16)> {
        None
    }

    /// Answers one mirror RPC (only called for keys [`mirror_versions`](Self::mirror_versions)
    /// accepts); `None` closes the connection.
    fn handle_mirror(
        &self,
        _ctx: &MirrorRequestContext,
        _request: MirrorRequest,
    ) -> Option<MirrorResponse> {
        None
    }
}

/// Who sent a mirror RPC.
#[derive(Debug, Clone)]
pub struct MirrorRequestContext {
    /// The connection's peer.
    pub peer: SocketAddr,
    /// A number unique to the connection for the life of the process.
    pub connection_id: u64,
    /// The header's `client_id`.
    pub client_id: Option<String>,
    /// The request's API key.
    pub api_key: MirrorApiKey,
    /// The request's correlation id.
    pub correlation_id: i32,
}

/// A handler's answer to one request, see [`Handler::handle_pipelined`].
// Moved once per request; boxing the response would cost an allocation each time.
#[allow(clippy::large_enum_variant)]
pub enum Reply {
    /// No response (Produce with acks=0).
    None,
    /// No response, and the connection is closed (a Produce with acks=0 that failed: as Kafka
    /// does, so that the producer notices and refreshes its metadata).
    Close,
    /// The response, ready now.
    Now(ResponseKind),
    /// Work that finishes the response — e.g. waiting for an `fdatasync` — run by the
    /// connection's writer thread, in request order, just before the response is sent, so that
    /// the connection's next requests can be read and handled (and share that sync) meanwhile.
    /// When no response waits before it and no further request has arrived (none buffered,
    /// none on the socket), the reading thread runs it itself and sends the response, sparing
    /// the hand-off to the writer thread (a wake-up, each a chance to wait for a CPU); requests
    /// arriving meanwhile wait in the socket. It must not depend on later requests of the same
    /// connection. (It used to get a thread of
    /// its own; starting one per acks=all request cost 85 µs at the median and 3.3 ms at p99 on
    /// a loaded 2-core machine.)
    Later(Box<dyn FnOnce() -> ResponseKind + Send>),
}

impl From<Option<ResponseKind>> for Reply {
    /// `Some` is [`Reply::Now`], `None` is [`Reply::None`].
    fn from(r: Option<ResponseKind>) -> Reply {
        r.map_or(Reply::None, Reply::Now)
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reply::None => f.write_str("Reply::None"),
            Reply::Close => f.write_str("Reply::Close"),
            Reply::Now(_) => f.write_str("Reply::Now(..)"),
            Reply::Later(_) => f.write_str("Reply::Later(..)"),
        }
    }
}
