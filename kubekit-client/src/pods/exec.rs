//! Running a command in a container, or attaching to its main process:
//! `pods/<name>/exec` and `pods/<name>/attach` over the websocket channel protocol.
//!
//! The connection is kube's websocket upgrade (`kube::Client::connect`, which negotiates
//! `v5.channel.k8s.io`, else `v4.channel.k8s.io`). The channels on it are kubekit's: one
//! task reads the server's messages (stdout, stderr, the final status) while another
//! writes the client's (stdin, its end, terminal sizes), so a server that stops reading
//! stdin (the command ended without reading it all) never keeps the status from being
//! read, as client-go's executor does with its goroutines.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

use super::from_kube;
use crate::clientset::ResourceClient;
use crate::rest::{Error, Result};

/// The channels of the protocol (`k8s.io/apimachinery/pkg/util/remotecommand`).
const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const STATUS: u8 = 3;
const RESIZE: u8 = 4;
/// `v5.channel.k8s.io`: `[CLOSE, channel]` ends that channel.
const CLOSE: u8 = 255;

/// How much of each stream is buffered between the connection and its reader or writer.
const PIPE_BYTES: usize = 64 * 1024;

/// A terminal's size, in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct TerminalSize {
    /// Columns.
    pub width: u16,
    /// Rows.
    pub height: u16,
}

/// Sets the size of a command's terminal (client-go's `TerminalSizeQueue`), from
/// [`Process::terminal_size`].
#[derive(Debug, Clone)]
pub struct TerminalSizeSender(mpsc::Sender<TerminalSize>);

impl TerminalSizeSender {
    /// Tells the command its terminal is now `width` columns by `height` rows. Fails
    /// once the command has ended.
    pub async fn resize(&mut self, width: u16, height: u16) -> Result<()> {
        self.0
            .send(TerminalSize { width, height })
            .await
            .map_err(|_| Error::Request("resizing the terminal: the command has ended".into()))
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
/// Each stream is a pipe of 64 KiB: read stdout and stderr while the command runs (a
/// stream nobody reads holds the command's output back once its pipe is full). Dropping
/// stdin ends the command's input; dropping an output discards the rest of it (and
/// [`wait`](Self::wait) discards outputs never taken). Dropping the `Process` closes the
/// connection.
#[derive(Debug)]
pub struct Process {
    stdin: Option<DuplexStream>,
    stdout: Option<DuplexStream>,
    stderr: Option<DuplexStream>,
    resize: Option<mpsc::Sender<TerminalSize>>,
    status: oneshot::Receiver<Status>,
    task: tokio::task::JoinHandle<std::result::Result<(), String>>,
    url: String,
}

impl Drop for Process {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Process {
    /// Starts the connection's tasks over `connection`, with pipes for the streams `opts`
    /// connects.
    fn start(connection: kube::client::Connection, opts: &ExecOptions, url: &str) -> Self {
        let pipe = |on: bool| on.then(|| tokio::io::duplex(PIPE_BYTES)).unzip();
        let (stdin, stdin_remote) = pipe(opts.stdin);
        let (stdout, stdout_remote) = pipe(opts.stdout);
        let (stderr, stderr_remote) = pipe(opts.stderr && !opts.tty);
        let (resize, resizes) = opts.tty.then(|| mpsc::channel(4)).unzip();
        let (status_tx, status) = oneshot::channel();
        let streams = (stdin_remote, stdout_remote, stderr_remote);
        Self {
            stdin,
            stdout,
            stderr,
            resize,
            status,
            task: tokio::spawn(carry(connection, streams, resizes, status_tx)),
            url: url.to_string(),
        }
    }

    /// The command's standard input, if asked for (once). Shutting it down or dropping it
    /// ends the command's input (it reads EOF). On a server speaking only
    /// `v4.channel.k8s.io`, which cannot say so, the end of input is not passed on.
    pub fn stdin(&mut self) -> Option<impl AsyncWrite + Unpin + Send + use<>> {
        self.stdin.take()
    }

    /// The command's standard output, if asked for (once).
    pub fn stdout(&mut self) -> Option<impl AsyncRead + Unpin + Send + use<>> {
        self.stdout.take()
    }

    /// The command's standard error, if asked for without a TTY (once).
    pub fn stderr(&mut self) -> Option<impl AsyncRead + Unpin + Send + use<>> {
        self.stderr.take()
    }

    /// Where to send terminal sizes (once), when a TTY was asked for: client-go's
    /// `TerminalSizeQueue`.
    pub fn terminal_size(&mut self) -> Option<TerminalSizeSender> {
        self.resize.take().map(TerminalSizeSender)
    }

    /// Waits for the command to end and returns its exit status. A command that ran and
    /// exited non-zero is `Ok` with that code; the server's other refusals (the container
    /// is not running, the command was not found) are [`Error::Api`] with its `Status`;
    /// a broken connection is [`Error::Transport`]. Output not taken is discarded and
    /// stdin not taken is ended.
    pub async fn wait(mut self) -> Result<ExitStatus> {
        drop((self.stdin.take(), self.stdout.take(), self.stderr.take()));
        let status = (&mut self.status).await.ok();
        let ended = (&mut self.task).await;
        let url = std::mem::take(&mut self.url);
        let broken = |why: String| Error::Transport {
            verb: "GET".into(),
            url: url.clone(),
            source: why.into(),
        };
        match (status, ended) {
            (Some(status), _) => exit_status(&status, &url),
            (None, Ok(Err(why))) => Err(broken(why)),
            (None, Ok(Ok(()))) => Err(broken(
                "the connection closed before the command's exit status arrived".into(),
            )),
            (None, Err(e)) => Err(broken(format!("the connection's task failed: {e}"))),
        }
    }

    /// Copies `stdin` to the command (then ends its input), its stdout and stderr to
    /// `stdout` and `stderr`, and returns its exit status as [`wait`](Self::wait) does:
    /// client-go's `Executor.StreamWithContext`. Pass `None` for a stream not connected in
    /// [`ExecOptions`]; a stream connected but given `None` here is discarded (stdin:
    /// ended at once).
    ///
    /// Returns when the command has ended and its output is copied, whether or not it read
    /// all of `stdin` (a read error of `stdin` is logged). A write error of `stdout` or
    /// `stderr` is returned after the command's end; the rest of that output is discarded
    /// meanwhile.
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
        let mut copy_in = std::pin::pin!(copy_stdin(self.stdin.take(), stdin));
        let copy_out = drain(self.stdout.take(), stdout);
        let copy_err = drain(self.stderr.take(), stderr);
        let mut done = std::pin::pin!(async { tokio::join!(self.wait(), copy_out, copy_err) });
        let mut copying_in = true;
        let (status, copied_out, copied_err) = loop {
            tokio::select! {
                done = &mut done => break done,
                copied = &mut copy_in, if copying_in => {
                    copying_in = false;
                    if let Err(e) = copied {
                        tracing::debug!(url, error = %e, "exec: copying stdin ended with an error");
                    }
                }
            }
        };
        let status = status?;
        for (stream, copied) in [("stdout", copied_out), ("stderr", copied_err)] {
            copied.map_err(|e| Error::Transport {
                verb: "GET".into(),
                url: format!("{url} (writing the command's {stream})"),
                source: Box::new(e),
            })?;
        }
        Ok(status)
    }
}

/// Copies `local` into the command's stdin, then ends it.
async fn copy_stdin(
    remote: Option<DuplexStream>,
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

/// Copies one of the command's outputs into `local`, or discards it. After a local write
/// error the rest is discarded and the error returned at its end.
async fn drain(
    remote: Option<DuplexStream>,
    local: Option<impl AsyncWrite + Unpin>,
) -> std::io::Result<()> {
    let Some(mut remote) = remote else {
        return Ok(());
    };
    let Some(mut local) = local else {
        return tokio::io::copy(&mut remote, &mut tokio::io::sink())
            .await
            .map(drop);
    };
    let copied = match tokio::io::copy(&mut remote, &mut local).await {
        Ok(_) => local.flush().await,
        Err(e) => Err(e),
    };
    if copied.is_err() {
        // Dropping `remote` would discard the rest as well; reading it keeps the order of
        // the error after the command's end.
        let _ = tokio::io::copy(&mut remote, &mut tokio::io::sink()).await;
    }
    copied
}

/// Carries the streams (the connection's side of stdin, stdout and stderr) until the
/// server ends the connection (after the status), or it breaks. Reading the server and
/// writing to it are separate, so neither waits for the other.
async fn carry(
    connection: kube::client::Connection,
    (stdin, stdout, stderr): (
        Option<DuplexStream>,
        Option<DuplexStream>,
        Option<DuplexStream>,
    ),
    resizes: Option<mpsc::Receiver<TerminalSize>>,
    status: oneshot::Sender<Status>,
) -> std::result::Result<(), String> {
    let closes = connection.supports_stream_close();
    let (sink, stream) = connection.into_stream().split();
    let mut read = std::pin::pin!(read_server(stream, stdout, stderr, status));
    let write = write_server(sink, stdin, resizes, closes);
    tokio::select! {
        read = &mut read => read.map(drop),
        // Writing ends on its own only on an error: the connection is broken, or the
        // server closed it after the command ended (one that exits without reading all
        // of its stdin). What the server sent before, the status among it, is still to be
        // read; the write's error stands only if no status comes.
        Err(e) = write => match tokio::time::timeout(AFTER_WRITE_ERROR, read).await {
            Ok(Ok(true)) => Ok(()),
            _ => Err(e),
        },
    }
}

/// How long the server's messages are still read after writing to it failed.
const AFTER_WRITE_ERROR: Duration = Duration::from_secs(10);

/// Passes the server's messages on: stdout, stderr, then the status, which ends it;
/// `true` once the status was passed on.
async fn read_server(
    mut stream: impl futures_util::Stream<
        Item = std::result::Result<Message, tokio_tungstenite::tungstenite::Error>,
    > + Unpin,
    mut stdout: Option<DuplexStream>,
    mut stderr: Option<DuplexStream>,
    status: oneshot::Sender<Status>,
) -> std::result::Result<bool, String> {
    while let Some(message) = stream.next().await {
        let message = message.map_err(|e| format!("reading the connection: {e}"))?;
        let Message::Binary(data) = message else {
            continue;
        };
        let Some((&channel, payload)) = data.split_first() else {
            continue;
        };
        // The server opens each channel with an empty message.
        if payload.is_empty() {
            continue;
        }
        let out = match channel {
            STDOUT => &mut stdout,
            STDERR => &mut stderr,
            STATUS => {
                let parsed = serde_json::from_slice::<Status>(payload).map_err(|e| {
                    format!(
                        "the command's status is not a Status ({e}): {}",
                        String::from_utf8_lossy(&payload[..payload.len().min(200)])
                    )
                })?;
                // The status is the server's last message: the command has ended.
                let _ = status.send(parsed);
                return Ok(true);
            }
            _ => continue,
        };
        // An output nobody reads any more is discarded.
        if let Some(pipe) = out
            && pipe.write_all(payload).await.is_err()
        {
            *out = None;
        }
    }
    Ok(false)
}

/// Sends the client's messages: stdin, its end (v5 only), terminal sizes.
async fn write_server(
    mut sink: impl futures_util::Sink<Message, Error = tokio_tungstenite::tungstenite::Error> + Unpin,
    mut stdin: Option<DuplexStream>,
    mut resizes: Option<mpsc::Receiver<TerminalSize>>,
    closes: bool,
) -> std::result::Result<(), String> {
    let mut buf = vec![0u8; 32 * 1024];
    let mut ping = tokio::time::interval(Duration::from_secs(60));
    ping.reset();
    loop {
        let message = tokio::select! {
            read = async { stdin.as_mut().expect("polled while present").read(&mut buf[1..]).await },
                if stdin.is_some() =>
            {
                match read {
                    Ok(0) | Err(_) => {
                        stdin = None;
                        if !closes {
                            continue;
                        }
                        Message::binary(vec![CLOSE, STDIN])
                    }
                    Ok(n) => {
                        buf[0] = STDIN;
                        Message::binary(buf[..=n].to_vec())
                    }
                }
            }
            size = async { resizes.as_mut().expect("polled while present").recv().await },
                if resizes.is_some() =>
            {
                let Some(size) = size else {
                    resizes = None;
                    continue;
                };
                let mut data = vec![RESIZE];
                data.extend(serde_json::to_vec(&size).map_err(|e| e.to_string())?);
                Message::binary(data)
            }
            // Keeps an idle connection (a shell waiting for input) from being cut.
            _ = ping.tick() => Message::Ping(Default::default()),
        };
        sink.send(message)
            .await
            .map_err(|e| format!("writing the connection: {e}"))?;
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
        self.connect("exec", name, &command, opts).await
    }

    /// Attaches to the main process of a container of Pod `name` (`pods/attach`), with
    /// the streams `opts` asks for; the container must have been started with `stdin`
    /// (and `tty`) for those to work. See [`Process`].
    pub async fn attach(&self, name: &str, opts: &ExecOptions) -> Result<Process> {
        self.connect("attach", name, &[], opts).await
    }

    async fn connect(
        &self,
        sub: &str,
        name: &str,
        command: &[String],
        opts: &ExecOptions,
    ) -> Result<Process> {
        self.pod_namespace(sub, name)?;
        let path = self.pod_path(name, sub);
        let mut query = form_urlencoded::Serializer::new(String::new());
        for arg in command {
            query.append_pair("command", arg);
        }
        if let Some(c) = &opts.container {
            query.append_pair("container", c);
        }
        let stderr = opts.stderr && !opts.tty;
        for (key, on) in [
            ("stdin", opts.stdin),
            ("stdout", opts.stdout),
            ("stderr", stderr),
            ("tty", opts.tty),
        ] {
            if on {
                query.append_pair(key, "true");
            }
        }
        let url = format!("{path}?{}", query.finish());
        let request = http::Request::get(&url)
            .body(Vec::new())
            .map_err(|e| Error::Request(format!("{sub} in pod {name:?}: {e}")))?;
        self.rest_client().throttle("GET", &path).await;
        let connection = self
            .rest_client()
            .http()
            .connect(request)
            .await
            .map_err(|e| from_kube(e, &path))?;
        Ok(Process::start(connection, opts, &path))
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

    fn frames(
        frames: &[&[u8]],
    ) -> impl futures_util::Stream<
        Item = std::result::Result<Message, tokio_tungstenite::tungstenite::Error>,
    > + Unpin
    + use<> {
        let frames: Vec<_> = frames
            .iter()
            .map(|f| Ok(Message::binary(f.to_vec())))
            .collect();
        futures_util::stream::iter(frames)
    }

    #[tokio::test]
    async fn server_frames_go_to_their_stream_and_the_status_ends_the_reading() {
        let (mut out, out_remote) = tokio::io::duplex(1024);
        let (mut err, err_remote) = tokio::io::duplex(1024);
        let (tx, rx) = oneshot::channel();
        let server = frames(&[
            &[STDOUT],
            &[STDERR],
            b"\x01hello ",
            b"\x02oops",
            b"\x09unknown channel",
            b"\x01world",
            &[b"\x03".as_slice(), br#"{"status":"Success","metadata":{}}"#].concat(),
            b"\x01after the status",
        ]);
        read_server(server, Some(out_remote), Some(err_remote), tx)
            .await
            .unwrap();
        let (mut o, mut e) = (String::new(), String::new());
        out.read_to_string(&mut o).await.unwrap();
        err.read_to_string(&mut e).await.unwrap();
        assert_eq!((o.as_str(), e.as_str()), ("hello world", "oops"));
        assert_eq!(rx.await.unwrap().status.as_deref(), Some("Success"));
    }

    #[tokio::test]
    async fn a_status_that_is_not_a_status_is_an_error_naming_it() {
        let (tx, rx) = oneshot::channel();
        let err = read_server(frames(&[b"\x03not json"]), None, None, tx)
            .await
            .unwrap_err();
        assert!(
            err.contains("not a Status") && err.contains("not json"),
            "{err}"
        );
        assert!(rx.await.is_err(), "no status was delivered");
    }

    #[tokio::test]
    async fn output_nobody_reads_is_discarded_not_waited_for() {
        let (out, out_remote) = tokio::io::duplex(4);
        drop(out);
        let (tx, rx) = oneshot::channel();
        let status = [b"\x03".as_slice(), br#"{"status":"Success"}"#].concat();
        let server = frames(&[b"\x01more than four bytes", &status]);
        read_server(server, Some(out_remote), None, tx)
            .await
            .unwrap();
        assert!(rx.await.is_ok());
    }

    #[test]
    fn terminal_sizes_are_sent_as_the_server_reads_them() {
        let size = TerminalSize {
            width: 120,
            height: 40,
        };
        assert_eq!(
            serde_json::to_string(&size).unwrap(),
            r#"{"Width":120,"Height":40}"#
        );
    }
}
