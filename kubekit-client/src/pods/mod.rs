//! Talking to a Pod's containers: logs, exec, attach and port-forward (client-go's
//! `Pods(ns).GetLogs`, `tools/remotecommand` and `tools/portforward`).
//!
//! Each is a method of the typed Pod client, [`ResourceClient<Pod>`]:
//!
//! | method | client-go | what it gives |
//! |---|---|---|
//! | [`logs`](ResourceClient::logs) | `GetLogs(name, opts).DoRaw` | the whole log |
//! | [`log_stream`](ResourceClient::log_stream) | `GetLogs(name, opts).Stream` | the log as it is written (`follow`) |
//! | [`exec`](ResourceClient::exec) | `remotecommand.NewWebSocketExecutor` on `pods/exec` | a [`Process`]: stdin, stdout, stderr, TTY size, exit code |
//! | [`attach`](ResourceClient::attach) | the same on `pods/attach` | a [`Process`] attached to the container's main process |
//! | [`port_forward`](ResourceClient::port_forward) | `portforward.New(...).ForwardPorts` | local listeners forwarding to the Pod's ports |
//! | [`port_forward_stream`](ResourceClient::port_forward_stream) | one stream of a port-forward dialer | one connection to a Pod port, in process |
//!
//! ```no_run
//! # #[cfg(feature = "ws")]
//! # async fn demo(clientset: kubekit::clientset::Clientset) -> kubekit::rest::Result<()> {
//! use kubekit::pods::{ExecOptions, LogOptions};
//!
//! let pods = clientset.core_v1().pods("default");
//! let last = pods.logs("web-0", &LogOptions { tail_lines: Some(10), ..Default::default() }).await?;
//! print!("{}", String::from_utf8_lossy(&last));
//!
//! let process = pods.exec("web-0", ["date"], &ExecOptions::default()).await?;
//! let status = process
//!     .stream(None::<tokio::io::Empty>, Some(tokio::io::stdout()), Some(tokio::io::stderr()))
//!     .await?;
//! assert!(status.success());
//! # Ok(())
//! # }
//! ```
//!
//! # Transports
//!
//! Logs are a plain streamed GET through the [`RestClient`](crate::rest::RestClient), with
//! its rate limiting, retries, metrics and errors. Exec, attach and port-forward upgrade
//! the connection to a websocket through kube's websocket support, which negotiates the
//! channel protocol: `v5.channel.k8s.io` (stdin can be closed on its own, so a command
//! reading its input to the end sees EOF), else `v4.channel.k8s.io`. Exec and attach
//! carry their channels themselves (reading the server apart from writing to it);
//! port-forward uses kube's port-forwarder. They wait for the client-side rate limiter
//! like every request; a refusal (no such Pod, a forbidden verb) is an [`Error::Api`] with
//! the server's `Status`. They are kubekit's `ws` feature, off by default; without it,
//! neither they nor kube's websocket support are compiled, and logs remain.

#[cfg(feature = "ws")]
mod exec;
mod logs;
#[cfg(feature = "ws")]
mod portforward;

#[cfg(feature = "ws")]
pub use exec::{ExecOptions, ExitStatus, Process, TerminalSize, TerminalSizeSender};
pub use logs::LogOptions;
#[cfg(feature = "ws")]
pub use portforward::{ForwardedPort, PortForward, PortMapping, PortStream};

use k8s_openapi::api::core::v1::Pod;

use crate::clientset::ResourceClient;
use crate::rest::{Error, Result};

impl ResourceClient<Pod> {
    /// This client's namespace, after checking that there is one and that `name` can be
    /// a Pod's name; `verb` names the operation in errors.
    fn pod_namespace(&self, verb: &str, name: &str) -> Result<&str> {
        let Some(namespace) = self.namespace() else {
            return Err(Error::Request(format!(
                "{verb} of pod {name:?}: the Pod client has no namespace; \
                 use clientset.core_v1().pods(namespace)"
            )));
        };
        if !crate::rest::valid_segment(name) {
            return Err(Error::Request(format!("{verb}: invalid pod name {name:?}")));
        }
        Ok(namespace)
    }

    /// The path of subresource `sub` of Pod `name`, for errors.
    #[cfg(feature = "ws")]
    fn pod_path(&self, name: &str, sub: &str) -> String {
        format!(
            "/api/v1/namespaces/{}/pods/{name}/{sub}",
            self.namespace().unwrap_or_default()
        )
    }
}

/// An error from kube's websocket layer as a kubekit error: the server's refusal as
/// [`Error::Api`], anything else as [`Error::Transport`] on `url`.
#[cfg(feature = "ws")]
fn from_kube(err: kube::Error, url: &str) -> Error {
    match err {
        kube::Error::Api(status) => Error::Api {
            verb: "GET".to_string(),
            url: url.to_string(),
            status: Box::new(kube_status(&status)),
        },
        other => Error::Transport {
            verb: "GET".to_string(),
            url: url.to_string(),
            source: Box::new(other),
        },
    }
}

/// kube's `Status` as k8s-openapi's, the type kubekit's errors carry. Both are the same
/// JSON object.
#[cfg(feature = "ws")]
fn kube_status(
    status: &kube::core::Status,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Status {
    serde_json::to_value(status)
        .and_then(serde_json::from_value)
        .unwrap_or_else(|_| k8s_openapi::apimachinery::pkg::apis::meta::v1::Status {
            code: Some(i32::from(status.code)),
            message: Some(status.message.clone()),
            reason: Some(status.reason.clone()),
            ..Default::default()
        })
}
