//! Test support: a loopback HTTP/1.1 server that answers as the test scripts it, and
//! misbehaves as hostile or broken servers do (answers never sent, bodies larger than
//! promised). Every request line it reads is recorded, with its `Accept` header and its
//! body; dropping it ends its tasks.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::{RestClient, RestConfig};

/// How the server answers one request.
pub enum Reply {
    /// A response with a `Content-Length`, on a connection kept alive.
    Full {
        /// The HTTP status code.
        status: u16,
        /// Headers besides `Content-Length`.
        headers: Vec<(&'static str, String)>,
        /// The body, sent whole.
        body: Vec<u8>,
    },
    /// A response whose body never ends (no length; bytes are sent until the client goes).
    Endless {
        /// The HTTP status code.
        status: u16,
    },
    /// The request is read and never answered; the connection stays open.
    Hang,
}

impl Reply {
    /// A JSON response.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Reply::Full {
            status,
            headers: vec![("Content-Type", "application/json".into())],
            body: body.into(),
        }
    }

    /// A `metav1.Status` response with `code` and `reason`.
    pub fn status(code: u16, reason: &str) -> Self {
        Self::json(
            code,
            format!(
                r#"{{"kind":"Status","apiVersion":"v1","status":"Failure","message":"scripted {reason}","reason":"{reason}","code":{code}}}"#
            ),
        )
    }
}

/// What the server records of the requests.
#[derive(Default)]
struct Seen {
    /// Each request's line.
    requests: Vec<String>,
    /// Each request's `Accept` header (empty when it had none).
    accepts: Vec<String>,
    /// Each request's `Accept-Encoding` header (empty when it had none).
    encodings: Vec<String>,
    /// Each request body: its `Content-Type` and its bytes.
    bodies: Vec<(String, Vec<u8>)>,
}

/// The handler: from the request line (`GET /api/v1/...?...`) to the reply.
type Handler = Arc<dyn Fn(&str) -> Reply + Send + Sync>;

/// A loopback server; see the [module docs](self).
pub struct TestServer {
    url: String,
    seen: Arc<Mutex<Seen>>,
    task: tokio::task::AbortHandle,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Starts a server on a free loopback port.
    pub async fn start(handler: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let handler: Handler = Arc::new(handler);
        let task = tokio::spawn({
            let seen = seen.clone();
            async move {
                // Dropped with the accept loop when the server is: no connection outlives it.
                let mut connections = JoinSet::new();
                while let Ok((stream, _)) = listener.accept().await {
                    connections.spawn(serve(stream, handler.clone(), seen.clone()));
                }
            }
        });
        Self {
            url,
            seen,
            task: task.abort_handle(),
        }
    }

    /// The request lines read so far.
    pub fn requests(&self) -> Vec<String> {
        self.seen.lock().requests.clone()
    }

    /// The `Accept` header of each request read so far (empty when it had none).
    pub fn accepts(&self) -> Vec<String> {
        self.seen.lock().accepts.clone()
    }

    /// The `Accept-Encoding` header of each request read so far (empty when it had none).
    pub fn accept_encodings(&self) -> Vec<String> {
        self.seen.lock().encodings.clone()
    }

    /// The bodies of the requests read so far that had one: `Content-Type` and bytes.
    pub fn bodies(&self) -> Vec<(String, Vec<u8>)> {
        self.seen.lock().bodies.clone()
    }

    /// A configuration for this server: no client-side rate limit, no retries.
    pub fn config(&self) -> RestConfig {
        let mut config = RestConfig::from_url(&self.url)
            .expect("loopback URL")
            .with_rate_limit(-1.0, 0);
        config.max_retries = 0;
        config
    }

    /// A client of [`config`](Self::config).
    pub fn client(&self) -> RestClient {
        RestClient::new(&self.config()).expect("client")
    }
}

/// Reads from `stream` into `buf` until `done` says how much of it is wanted; `None` when
/// the connection ends first.
async fn read_until(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    done: impl Fn(&[u8]) -> Option<usize>,
) -> Option<usize> {
    loop {
        if let Some(n) = done(buf) {
            return Some(n);
        }
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Answers the requests of one connection (request bodies with a `Content-Length`).
async fn serve(mut stream: TcpStream, handler: Handler, seen: Arc<Mutex<Seen>>) {
    let mut buf = Vec::new();
    loop {
        let Some(head_end) = read_until(&mut stream, &mut buf, |b| {
            b.windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map(|end| end + 4)
        })
        .await
        else {
            return;
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        buf.drain(..head_end);
        let header = |wanted: &str| {
            head.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case(wanted)
                    .then(|| value.trim().to_string())
            })
        };
        let length: usize = header("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        if read_until(&mut stream, &mut buf, |b| {
            (b.len() >= length).then_some(length)
        })
        .await
        .is_none()
        {
            return;
        }
        let body: Vec<u8> = buf.drain(..length).collect();
        let line = head.lines().next().unwrap_or_default();
        let line = line.trim_end_matches(" HTTP/1.1").to_string();
        {
            let mut seen = seen.lock();
            seen.requests.push(line.clone());
            seen.accepts.push(header("accept").unwrap_or_default());
            seen.encodings
                .push(header("accept-encoding").unwrap_or_default());
            if length > 0 {
                seen.bodies
                    .push((header("content-type").unwrap_or_default(), body));
            }
        }
        let bytes = match handler(&line) {
            Reply::Hang => return std::future::pending().await,
            Reply::Full {
                status,
                headers,
                body,
            } => {
                let mut out = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\n", body.len());
                for (name, value) in headers {
                    out.push_str(&format!("{name}: {value}\r\n"));
                }
                out.push_str("\r\n");
                [out.into_bytes(), body].concat()
            }
            Reply::Endless { status } => {
                let head = format!("HTTP/1.1 {status} X\r\nConnection: close\r\n\r\n");
                if stream.write_all(head.as_bytes()).await.is_ok() {
                    let chunk = vec![b'x'; 64 << 10];
                    while stream.write_all(&chunk).await.is_ok() {}
                }
                return;
            }
        };
        if stream.write_all(&bytes).await.is_err() {
            return;
        }
    }
}
