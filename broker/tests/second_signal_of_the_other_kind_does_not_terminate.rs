//! `shutdown_on_signals` promises: "After the first signal the default action is restored, so a
//! second SIGTERM or SIGINT terminates the process" (for a graceful shutdown that hangs).
//! `SA_RESETHAND` only resets the signal that was delivered: after a SIGTERM (`docker stop`,
//! systemd), a Ctrl-C (SIGINT) still runs our handler and only asks for shutdown again.
//! Its own test binary: signal dispositions are process-wide.

use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};
use mirrorlog_broker::server::{
    Handler, RequestContext, Server, ServerConfig, shutdown_on_signals,
};
use std::sync::Arc;
use std::time::Duration;

struct Nothing;
impl Handler for Nothing {
    fn handle(
        &self,
        _: &RequestContext,
        _: &RequestHeader,
        _: RequestKind,
    ) -> Option<ResponseKind> {
        None
    }
    fn supported_versions(&self, _: ApiKey) -> Option<(i16, i16)> {
        None
    }
}

fn disposition(signal: libc::c_int) -> libc::sighandler_t {
    // SAFETY: a null new action only reads the current one into `old`, a live sigaction.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(signal, std::ptr::null(), &mut old), 0);
        old.sa_sigaction
    }
}

#[test]
fn after_sigterm_a_sigint_gets_the_default_action() {
    let server = Server::bind(
        ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..ServerConfig::default()
        },
        Arc::new(Nothing),
    )
    .unwrap();
    let handle = server.shutdown_handle();
    let (tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(server.run().is_ok());
    });
    shutdown_on_signals(handle).unwrap();
    // SAFETY: raise(3) has no preconditions; our SIGTERM handler is installed.
    assert_eq!(unsafe { libc::raise(libc::SIGTERM) }, 0);
    assert!(done.recv_timeout(Duration::from_secs(60)).unwrap());
    assert_eq!(disposition(libc::SIGTERM), libc::SIG_DFL);
    assert_eq!(
        disposition(libc::SIGINT),
        libc::SIG_DFL,
        "a SIGINT after the SIGTERM would only request shutdown again, not terminate"
    );
}
