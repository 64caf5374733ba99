//! Forwarding local connections to a Pod's ports: `pods/<name>/portforward` over the
//! websocket port-forward protocol, one websocket per forwarded connection.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::str::FromStr;
use std::task::{Context, Poll};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::from_kube;
use crate::clientset::{GetOptions, ResourceClient};
use crate::rest::{Error, Result};

/// A local port and the Pod port it forwards to, written as `kubectl port-forward` takes
/// them: `"8080:80"` (local 8080 to 80), `"80"` (local 80 to 80), `":80"` or `"0:80"`
/// (any free local port to 80).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortMapping {
    /// The local port; 0 picks a free one.
    pub local: u16,
    /// The Pod's port.
    pub remote: u16,
}

impl FromStr for PortMapping {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| Error::Request(format!("port mapping {s:?}: {why}"));
        let port = |p: &str| {
            p.parse::<u16>()
                .map_err(|_| bad("ports are numbers 0-65535"))
        };
        let (local, remote) = match s.split_once(':') {
            Some(("", remote)) => (0, port(remote)?),
            Some((local, remote)) => (port(local)?, port(remote)?),
            None => {
                let p = port(s)?;
                (p, p)
            }
        };
        if remote == 0 {
            return Err(bad("the Pod's port cannot be 0"));
        }
        Ok(Self { local, remote })
    }
}

impl fmt::Display for PortMapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.local, self.remote)
    }
}

/// One forwarded port: where it listens, and the Pod port behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwardedPort {
    /// The local address connections are accepted on (the port chosen when 0 was asked).
    pub local: SocketAddr,
    /// The Pod's port.
    pub remote: u16,
}

/// Local listeners forwarding to a Pod's ports, from
/// [`port_forward`](ResourceClient::port_forward); client-go's `PortForwarder` once
/// ready. Each accepted connection gets its own websocket to the API server; an error the
/// server reports for it (nothing listens on the Pod's port) is logged and ends that
/// connection only. Forwarding stops on [`stop`](Self::stop) or when this is dropped.
///
/// A local client that half-closes (shuts down its writing side and waits for the reply,
/// as `nc -N` does) loses the reply: the websocket port-forward protocol cannot carry a
/// half-close, so it ends the whole connection.
#[derive(Debug)]
pub struct PortForward {
    ports: Vec<ForwardedPort>,
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl PortForward {
    /// The forwarded ports, in the order they were asked for.
    pub fn ports(&self) -> &[ForwardedPort] {
        &self.ports
    }

    /// The local address forwarding to Pod port `remote`, if it is forwarded.
    pub fn local_addr(&self, remote: u16) -> Option<SocketAddr> {
        self.ports
            .iter()
            .find(|p| p.remote == remote)
            .map(|p| p.local)
    }

    /// Closes the listeners and the open connections, and waits until they are closed.
    pub async fn stop(self) {
        self.stop.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}

impl Drop for PortForward {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// One connection to a port of a Pod, in process: bytes written go to the Pod's port,
/// bytes read come from it. From [`port_forward_stream`](ResourceClient::port_forward_stream).
///
/// The websocket port-forward protocol has no half-close: shutting down the writing side
/// ends the whole connection, and what the Pod sends after it is lost.
pub struct PortStream {
    stream: DuplexStream,
    /// The server's error report, until it has resolved.
    error: Option<BoxFuture<'static, Option<String>>>,
    /// What it resolved to.
    reported: Option<String>,
    forwarder: kube::api::Portforwarder,
}

impl fmt::Debug for PortStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortStream").finish_non_exhaustive()
    }
}

impl PortStream {
    /// Resolves with the error the server reports for this port (e.g. nothing listens
    /// on it in the Pod), or `None` when the connection ends without one; later calls
    /// return the same at once.
    pub async fn error(&mut self) -> Option<String> {
        if let Some(report) = self.error.as_mut() {
            self.reported = report.await;
            self.error = None;
        }
        self.reported.clone()
    }
}

impl Drop for PortStream {
    fn drop(&mut self) {
        self.forwarder.abort();
    }
}

impl AsyncRead for PortStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for PortStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

impl ResourceClient<Pod> {
    /// Opens one connection to port `port` of Pod `name` (one websocket to the API
    /// server), for use in process. Use [`port_forward`](Self::port_forward) for local
    /// listeners.
    pub async fn port_forward_stream(&self, name: &str, port: u16) -> Result<PortStream> {
        if port == 0 {
            return Err(Error::Request(format!(
                "port-forward to pod {name:?}: the Pod's port cannot be 0"
            )));
        }
        let api = kube::Api::<Pod>::namespaced(
            self.rest_client().http().clone(),
            self.pod_namespace("port-forward", name)?,
        );
        let url = self.pod_path(name, "portforward");
        self.rest_client().throttle("GET", &url).await;
        let mut forwarder = api
            .portforward(name, &[port])
            .await
            .map_err(|e| from_kube(e, &url))?;
        let (Some(stream), Some(error)) = (forwarder.take_stream(port), forwarder.take_error(port))
        else {
            unreachable!("a forwarder opened for one port has that port's stream and error")
        };
        Ok(PortStream {
            stream,
            error: Some(error.boxed()),
            reported: None,
            forwarder,
        })
    }

    /// Listens on `address` for each of `ports` and forwards every connection accepted
    /// to the Pod's port, like `kubectl port-forward`: client-go's
    /// `portforward.New(...).ForwardPorts` once ready. The Pod must be running (as
    /// kubectl checks); a local port already in use is an error, and nothing is left
    /// listening.
    pub async fn port_forward(
        &self,
        name: &str,
        address: IpAddr,
        ports: &[PortMapping],
    ) -> Result<PortForward> {
        if ports.is_empty() {
            return Err(Error::Request(format!(
                "port-forward to pod {name:?}: no ports given"
            )));
        }
        self.pod_namespace("port-forward", name)?;
        let pod = self.get(name, &GetOptions::default()).await?;
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if phase != Some("Running") {
            return Err(Error::Request(format!(
                "port-forward to pod {name:?}: the Pod is not running (phase {}); \
                 ports can be forwarded to a running Pod only",
                phase.unwrap_or("unknown")
            )));
        }
        let mut listeners = Vec::with_capacity(ports.len());
        for mapping in ports {
            let listener = TcpListener::bind((address, mapping.local))
                .await
                .map_err(|e| {
                    Error::Request(format!(
                        "port-forward {mapping}: listening on {address}:{}: {e}",
                        mapping.local
                    ))
                })?;
            let local = listener.local_addr().map_err(|e| {
                Error::Request(format!("port-forward {mapping}: local address: {e}"))
            })?;
            listeners.push((
                listener,
                ForwardedPort {
                    local,
                    remote: mapping.remote,
                },
            ));
        }
        let stop = CancellationToken::new();
        let tasks = TaskTracker::new();
        let forwarded = listeners.iter().map(|(_, p)| *p).collect();
        for (listener, port) in listeners {
            let (pods, name, stop, conns) =
                (self.clone(), name.to_string(), stop.clone(), tasks.clone());
            tasks.spawn(async move {
                loop {
                    let accepted = tokio::select! {
                        () = stop.cancelled() => return,
                        accepted = listener.accept() => accepted,
                    };
                    match accepted {
                        Ok((conn, peer)) => {
                            tracing::debug!(%peer, local = %port.local, remote = port.remote, pod = name, "handling connection");
                            let (pods, name, stop) = (pods.clone(), name.clone(), stop.clone());
                            conns.spawn(async move {
                                tokio::select! {
                                    () = stop.cancelled() => {}
                                    () = forward(&pods, &name, port, conn) => {}
                                }
                            });
                        }
                        Err(e) => {
                            tracing::warn!(local = %port.local, error = %e, "port-forward: accepting a connection failed");
                            // Out of file descriptors and the like: give the system a moment.
                            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        }
                    }
                }
            });
        }
        Ok(PortForward {
            ports: forwarded,
            stop,
            tasks,
        })
    }
}

/// Carries one accepted connection to the Pod's port and back until either side closes
/// it; errors are logged, as kubectl prints them, and end this connection only.
async fn forward(pods: &ResourceClient<Pod>, name: &str, port: ForwardedPort, mut conn: TcpStream) {
    let mut remote = match pods.port_forward_stream(name, port.remote).await {
        Ok(remote) => remote,
        Err(e) => {
            tracing::warn!(pod = name, remote = port.remote, error = %e, "port-forward: connecting to the Pod failed");
            return;
        }
    };
    let PortStream { stream, error, .. } = &mut remote;
    let error = async {
        match error.as_mut() {
            Some(report) => report.await,
            None => None,
        }
    };
    tokio::select! {
        copied = tokio::io::copy_bidirectional(&mut conn, stream) => {
            if let Err(e) = copied {
                tracing::debug!(pod = name, remote = port.remote, error = %e, "port-forward: connection ended");
            }
        }
        Some(message) = error => {
            tracing::warn!(pod = name, remote = port.remote, message, "port-forward: the server reported an error");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_mappings_parse_as_kubectl_writes_them() {
        let m = |s: &str| s.parse::<PortMapping>().unwrap();
        assert_eq!(
            m("8080:80"),
            PortMapping {
                local: 8080,
                remote: 80
            }
        );
        assert_eq!(
            m("80"),
            PortMapping {
                local: 80,
                remote: 80
            }
        );
        assert_eq!(
            m(":80"),
            PortMapping {
                local: 0,
                remote: 80
            }
        );
        assert_eq!(
            m("0:80"),
            PortMapping {
                local: 0,
                remote: 80
            }
        );
    }

    #[test]
    fn bad_port_mappings_are_refused_with_the_reason() {
        for (text, why) in [
            ("http", "numbers"),
            ("8080:", "numbers"),
            ("70000", "numbers"),
            ("8080:0", "cannot be 0"),
            ("0", "cannot be 0"),
        ] {
            let err = text.parse::<PortMapping>().unwrap_err().to_string();
            assert!(err.contains(why) && err.contains(text), "{text}: {err}");
        }
    }
}
