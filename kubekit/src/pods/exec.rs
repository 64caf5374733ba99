//! Running a command in a container, or attaching to its main process:
//! `pods/<name>/exec` and `pods/<name>/attach` over the websocket channel protocol.

use std::future::Future;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::from_kube;
use crate::clientset::ResourceClient;
use crate::rest::{Error, Result};

pub use kube::api::TerminalSize;

/// Sets the size of a command's terminal (client-go's `TerminalSizeQueue`), from
/// [`Process::terminal_size`].
#[derive(Debug, Clone)]
pub struct TerminalSizeSender(futures_channel::mpsc::Sender<TerminalSize>);

impl TerminalSizeSender {
    /// Tells the command its terminal is now `width` columns by `height` rows. Fails
    /// once the command has ended.
    pub async fn resize(&mut self, width: u16, height: u16) -> Result<()> {
        futures_util::SinkExt::send(&mut self.0, TerminalSize { width, height })
            .await
            .map_err(|e| Error::Request(format!("resizing the terminal: {e}")))
    }
}

/// Which streams to connect, in which container: client-go's `PodExecOptions` /
/// `PodAttachOptions` without the command. The default connects stdout and stderr of the
/// Pod's only container, without stdin or TTY, as `kubectl exec` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOptions {
    /// The container; may be left out when the Pod has one container.
    pub container: Option<String>,
    /// Connect the command's standard input ([`Process::stdin`]).
    pub stdin: bool,
    /// Connect its standard output ([`Process::stdout`]).
    pub stdout: bool,
    /// Connect its standard error ([`Process::stderr`]); with `tty`, the terminal merges
    /// it into stdout.
    pub stderr: bool,
    /// Allocate a terminal; its size is set with [`Process::terminal_size`].
    pub tty: bool,
}

impl Default for ExecOptions {
    fn default() -> Self {
        Self {
            container: None,
            stdin: false,
            stdout: true,
            stderr: true,
            tty: false,
        }
    }
}

impl ExecOptions {
    fn params(&self) -> kube::api::AttachParams {
        let mut p = kube::api::AttachParams::default()
            .stdin(self.stdin)
            .stdout(self.stdout)
            // A terminal has one output stream; the server refuses stderr with a TTY.
            .stderr(self.stderr && !self.tty)
            .tty(self.tty);
        if let Some(c) = &self.container {
            p = p.container(c.clone());
        }
        p
    }
}

/// How a command ended: its exit code (client-go reports a non-zero one as
/// `exec.CodeExitError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitStatus {
    code: i32,
}

impl ExitStatus {
    /// The exit code; 0 for success.
    pub fn code(self) -> i32 {
        self.code
    }

    /// Whether the command exited with code 0.
    pub fn success(self) -> bool {
        self.code == 0
    }
}

/// A command running in a container (or a container's main process, attached). Take the
/// streams you asked for, use them, then [`wait`](Self::wait) for the exit status; or hand
/// local readers and writers to [`stream`](Self::stream), which does both.
///
/// Output is buffered in small pipes: read stdout and stderr while the command runs (a
/// stream nobody reads stops the command's output once its pipe is full). Dropping the
/// `Process` closes the connection.
pub struct Process {
    inner: kube::api::AttachedProcess,
    url: String,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Process {
    /// The command's standard input, if asked for (once). Shutting it down (or dropping
    /// it) sends EOF: the command sees the end of its input (on servers speaking
    /// `v4.channel.k8s.io` only, EOF closes the whole connection instead).
    pub fn stdin(&mut self) -> Option<impl AsyncWrite + Unpin + Send + use<>> {
        self.inner.stdin()
    }

    /// The command's standard output, if asked for (once).
    pub fn stdout(&mut self) -> Option<impl AsyncRead + Unpin + Send + use<>> {
        self.inner.stdout()
    }

    /// The command's standard error, if asked for without a TTY (once).
    pub fn stderr(&mut self) -> Option<impl AsyncRead + Unpin + Send + use<>> {
        self.inner.stderr()
    }

    /// Where to send terminal sizes (once), when a TTY was asked for: client-go's
    /// `TerminalSizeQueue`.
    pub fn terminal_size(&mut self) -> Option<TerminalSizeSender> {
        self.inner.terminal_size().map(TerminalSizeSender)
    }

    /// Waits for the command to end and returns its exit status. A command that ran and
    /// exited non-zero is `Ok` with that code; the server's other refusals (the container
    /// is not running, the command was not found) are [`Error::Api`] with its `Status`;
    /// a broken connection is [`Error::Transport`].
    pub async fn wait(mut self) -> Result<ExitStatus> {
        let status = self
            .inner
            .take_status()
            .expect("the status is taken only here, once");
        let url = self.url;
        let (status, joined) = tokio::join!(status, self.inner.join());
        match (status, joined) {
            (Some(status), _) => exit_status(&status, &url),
            (None, Err(e)) => Err(Error::Transport {
                verb: "GET".into(),
                url,
                source: Box::new(e),
            }),
            (None, Ok(())) => Err(Error::Transport {
                verb: "GET".into(),
                url,
                source: "the connection closed before the command's exit status arrived".into(),
            }),
        }
    }

    /// Copies `stdin` to the command (then sends EOF), its stdout and stderr to `stdout`
    /// and `stderr`, and returns its exit status as [`wait`](Self::wait) does: client-go's
    /// `Executor.StreamWithContext`. Pass `None` for a stream not connected in
    /// [`ExecOptions`]; a stream connected but given `None` here is discarded.
    pub async fn stream<I, O, E>(
        mut self,
        stdin: Option<I>,
        stdout: Option<O>,
        stderr: Option<E>,
    ) -> Result<ExitStatus>
    where
        I: AsyncRead + Unpin,
        O: AsyncWrite + Unpin,
        E: AsyncWrite + Unpin,
    {
        let url = self.url.clone();
        let copy_in = copy_stdin(self.stdin(), stdin);
        let copy_out = drain(self.stdout(), stdout);
        let copy_err = drain(self.stderr(), stderr);
        let status = self.wait();
        let (status, copied_in, copied_out, copied_err) =
            tokio::join!(status, copy_in, copy_out, copy_err);
        let status = status?;
        for (stream, copied) in [
            ("stdin", copied_in),
            ("stdout", copied_out),
            ("stderr", copied_err),
        ] {
            copied.map_err(|e| Error::Transport {
                verb: "GET".into(),
                url: format!("{url} ({stream})"),
                source: Box::new(e),
            })?;
        }
        Ok(status)
    }
}

/// Copies `local` into the command's stdin, then closes it.
async fn copy_stdin(
    remote: Option<impl AsyncWrite + Unpin>,
    local: Option<impl AsyncRead + Unpin>,
) -> std::io::Result<()> {
    let Some(mut remote) = remote else {
        return Ok(());
    };
    if let Some(mut local) = local {
        tokio::io::copy(&mut local, &mut remote).await?;
    }
    remote.shutdown().await
}

/// Copies one of the command's outputs into `local`, or reads it to the end unseen.
async fn drain(
    remote: Option<impl AsyncRead + Unpin>,
    local: Option<impl AsyncWrite + Unpin>,
) -> std::io::Result<()> {
    let Some(mut remote) = remote else {
        return Ok(());
    };
    match local {
        Some(mut local) => {
            tokio::io::copy(&mut remote, &mut local).await?;
            local.flush().await
        }
        None => tokio::io::copy(&mut remote, &mut tokio::io::sink())
            .await
            .map(drop),
    }
}

/// The exit status the server's final `Status` describes (client-go's
/// `remotecommand` error decoder): `Success` is code 0; `NonZeroExitCode` carries the
/// code in its `ExitCode` cause; anything else is the server's error.
fn exit_status(status: &Status, url: &str) -> Result<ExitStatus> {
    if status.status.as_deref() == Some("Success") {
        return Ok(ExitStatus { code: 0 });
    }
    if status.reason.as_deref() == Some("NonZeroExitCode") {
        let code = status
            .details
            .as_ref()
            .and_then(|d| d.causes.as_ref())
            .into_iter()
            .flatten()
            .find(|c| c.reason.as_deref() == Some("ExitCode"))
            .and_then(|c| c.message.as_deref()?.parse::<i32>().ok());
        if let Some(code) = code {
            return Ok(ExitStatus { code });
        }
    }
    Err(Error::Api {
        verb: "GET".into(),
        url: url.to_string(),
        status: Box::new(status.clone()),
    })
}

impl ResourceClient<Pod> {
    /// Runs `command` in Pod `name` (client-go's `remotecommand` executor on
    /// `pods/exec`), connecting the streams `opts` asks for. Returns once the server has
    /// accepted the connection; the command runs until it exits, see [`Process`].
    pub async fn exec<I, T>(&self, name: &str, command: I, opts: &ExecOptions) -> Result<Process>
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        let command: Vec<String> = command.into_iter().map(Into::into).collect();
        if command.is_empty() {
            return Err(Error::Request(format!(
                "exec in pod {name:?}: no command given"
            )));
        }
        let api = self.kube_api("exec", name)?;
        let url = self.pod_path(name, "exec");
        self.connect(&url, api.exec(name, command, &opts.params()))
            .await
    }

    /// Attaches to the main process of a container of Pod `name` (`pods/attach`), with
    /// the streams `opts` asks for; the container must have been started with `stdin`
    /// (and `tty`) for those to work. See [`Process`].
    pub async fn attach(&self, name: &str, opts: &ExecOptions) -> Result<Process> {
        let api = self.kube_api("attach", name)?;
        let url = self.pod_path(name, "attach");
        self.connect(&url, api.attach(name, &opts.params())).await
    }

    async fn connect(
        &self,
        url: &str,
        connect: impl Future<Output = kube::Result<kube::api::AttachedProcess>>,
    ) -> Result<Process> {
        self.rest_client().throttle("GET", url).await;
        let inner = connect.await.map_err(|e| from_kube(e, url))?;
        Ok(Process {
            inner,
            url: url.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(json: &str) -> Status {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_success_status_is_exit_code_zero() {
        let s = exit_status(&status(r#"{"status":"Success","metadata":{}}"#), "/x").unwrap();
        assert!(s.success());
        assert_eq!(s.code(), 0);
    }

    #[test]
    fn a_non_zero_exit_is_its_code_not_an_error() {
        let s = exit_status(
            &status(
                r#"{"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]},"metadata":{}}"#,
            ),
            "/x",
        )
        .unwrap();
        assert_eq!(s.code(), 3);
        assert!(!s.success());
    }

    #[test]
    fn other_failures_are_the_servers_error() {
        let err = exit_status(
            &status(
                r#"{"status":"Failure","message":"container not found (\"nope\")","reason":"InternalError","code":500,"metadata":{}}"#,
            ),
            "/api/v1/namespaces/ns/pods/p/exec",
        )
        .unwrap_err();
        match err {
            Error::Api { status, url, .. } => {
                assert_eq!(status.reason.as_deref(), Some("InternalError"));
                assert_eq!(url, "/api/v1/namespaces/ns/pods/p/exec");
            }
            other => panic!("expected an API error, got {other:?}"),
        }
    }

    #[test]
    fn a_tty_gets_no_separate_stderr() {
        let p = ExecOptions {
            tty: true,
            stdin: true,
            ..Default::default()
        }
        .params();
        assert!(p.tty && p.stdin && p.stdout && !p.stderr);
    }
}
