//! The HTTP/1.1 serving loop of kubekit's servers (the manager's metrics and health
//! endpoints, the webhook server): accepting connections until a cancellation token fires,
//! serving each one, and the handle of a running server.
//!
//! # Contract
//!
//! - [`next_connection`] returns accepted connections with `TCP_NODELAY` set, logs and
//!   skips a failed accept, and returns `None` once its token fires.
//! - [`serve_connection`] serves one connection until the client closes it; once the token
//!   fires, it answers the requests in flight and closes. Errors are logged, never returned:
//!   one client's broken connection is not the server's failure.
//! - [`Served`] is what a server's `serve` returns: its address (the port chosen for port 0)
//!   and a future that ends when it has stopped.

use std::net::SocketAddr;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The next connection `listener` accepts (a failure to accept is logged, and the next
/// one awaited); `None` once `cancel` fires. `server` names the server in log lines.
pub async fn next_connection(
    listener: &TcpListener,
    cancel: &CancellationToken,
    server: &str,
) -> Option<TcpStream> {
    loop {
        let accepted = tokio::select! {
            () = cancel.cancelled() => return None,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                // Responses are written as they are ready: without this, a TLS handshake's
                // last flight waits for the client's delayed ACK (some 40 ms).
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!("{server} server: setting TCP_NODELAY: {e}");
                }
                return Some(stream);
            }
            Err(e) => tracing::warn!("{server} server: accepting a connection: {e}"),
        }
    }
}

/// Serves one HTTP/1.1 connection with `service` until the client closes it or, once
/// `cancel` fires, until the requests in flight are answered. A failed connection is
/// logged at debug level, under `server`'s name.
pub async fn serve_connection<I, S, B>(io: I, service: S, cancel: &CancellationToken, server: &str)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    S: hyper::service::HttpService<Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let connection = http1::Builder::new().serve_connection(io, service);
    tokio::pin!(connection);
    tokio::select! {
        () = cancel.cancelled() => connection.as_mut().graceful_shutdown(),
        result = connection.as_mut() => {
            if let Err(e) = result {
                tracing::debug!("{server} server: a connection failed: {e}");
            }
            return;
        }
    }
    let _ = connection.await;
}

/// A running server (the manager's metrics and health endpoints, a webhook server): where it
/// listens, and its task.
#[derive(Debug)]
pub struct Served {
    address: SocketAddr,
    task: JoinHandle<()>,
    /// What it serves, for the log line of a failure.
    what: &'static str,
}

impl Served {
    /// `task`, serving `what` at `address`.
    pub fn new(address: SocketAddr, task: JoinHandle<()>, what: &'static str) -> Self {
        Self {
            address,
            task,
            what,
        }
    }

    /// The address it listens on (the port chosen when port 0 was asked for).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Waits until the server has stopped (after its cancellation token fired).
    pub async fn stopped(self) {
        if let Err(e) = self.task.await {
            tracing::error!("the {} server failed: {e}", self.what);
        }
    }
}
