//! A watch response body as a stream of decoded events, decoded on every core when events
//! arrive faster than one core decodes them.
//!
//! # Contract
//!
//! - **Order.** Events come out in the order of their lines, whichever thread decoded
//!   them; a transport error or a line over the limit comes out after every event before
//!   it, and ends the stream.
//! - **Latency.** A few lines that arrive alone (a watch's steady state) are decoded at
//!   once on the task that polls the stream. Lines that arrive together (a streaming
//!   list's initial events, a burst of changes) are decoded in batches of up to
//!   [`BATCH_LINES`] lines on tokio's blocking pool, on up to one batch per core across
//!   the process, while more are read. When every core is busy and this stream has a
//!   batch in decoding, it stops reading: the stream holds at most one batch of raw lines
//!   beyond those being decoded, and at most one batch per core plus one of decoded
//!   events not yet taken.
//! - **Back-pressure.** Nothing is read while the consumer does not poll, beyond the
//!   batches already started.
//! - **Threads.** Batches run on the blocking pool, whose threads are kept between
//!   batches, so per-thread state (the compact cache's compression contexts) is made once
//!   per thread, not once per batch. Without a tokio runtime every line is decoded inline.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures_util::Stream;
use hyper::body::Body;
use serde::de::DeserializeOwned;

use super::error::{Error, Result};
use super::watch::{Framing, WatchDecoder, WatchEvent, decode_last_event};
use crate::spawn::{Blocking, spawn_blocking};

/// The most lines one decoding batch holds.
pub(crate) const BATCH_LINES: usize = 64;

/// The most bytes of lines one decoding batch holds (a batch of large objects is sent
/// before it has [`BATCH_LINES`] lines).
const BATCH_BYTES: usize = 2 << 20;

/// Fewer lines than this, arriving while nothing of the stream is being decoded, are
/// decoded at once on the polling task: a thread hop costs more than decoding one object.
const INLINE_LINES: usize = 8;

/// Batches being decoded on the blocking pool, across the process.
static BUSY: AtomicUsize = AtomicUsize::new(0);

/// How many batches may be decoded at once across the process: one per core.
pub(crate) fn decoders() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// A slot of the process's decoders, given back when the batch is decoded.
struct Slot;

impl Slot {
    fn acquire() -> Option<Self> {
        let limit = decoders();
        BUSY.fetch_update(Ordering::AcqRel, Ordering::Acquire, |busy| {
            (busy < limit).then_some(busy + 1)
        })
        .ok()
        .map(|_| Slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        BUSY.fetch_sub(1, Ordering::AcqRel);
    }
}

type Events<K> = std::vec::IntoIter<Result<WatchEvent<K>>>;

/// Events in stream order: decoded, or being decoded.
enum Batch<K> {
    Decoded(Events<K>),
    Decoding(Blocking<Vec<Result<WatchEvent<K>>>>),
}

/// A watch body's events; see the [module docs](self).
pub(crate) struct DecodedWatch<K, B, F> {
    body: B,
    /// Turns a transport error of the body into the stream's error.
    body_error: F,
    decoder: WatchDecoder<K>,
    what: Arc<str>,
    /// Lines read and not yet sent to decoding, and their bytes.
    lines: Vec<Bytes>,
    line_bytes: usize,
    /// Batches in stream order, the first one next.
    batches: VecDeque<Batch<K>>,
    /// How many of `batches` are being decoded.
    decoding: usize,
    /// The body has ended (or failed): nothing more to read.
    ended: bool,
}

// Nothing is pinned through the stream: its events are moved out, never polled.
impl<K, B: Unpin, F: Unpin> Unpin for DecodedWatch<K, B, F> {}

impl<K, B, F> DecodedWatch<K, B, F>
where
    K: DeserializeOwned + Send + 'static,
    B: Body<Data = Bytes> + Unpin,
    F: FnMut(B::Error) -> Error + Unpin,
{
    /// The events of `body`, split and checked by `decoder`.
    pub(crate) fn new(body: B, decoder: WatchDecoder<K>, body_error: F) -> Self {
        let what = Arc::from(decoder.what());
        Self {
            body,
            body_error,
            decoder,
            what,
            lines: Vec::new(),
            line_bytes: 0,
            batches: VecDeque::new(),
            decoding: 0,
            ended: false,
        }
    }

    /// Whether enough lines wait to fill a batch.
    fn batch_full(&self) -> bool {
        self.lines.len() >= BATCH_LINES || self.line_bytes >= BATCH_BYTES
    }

    /// Takes the complete lines out of the decoder; a failure ends the input after the
    /// lines before it.
    fn take_lines(&mut self) {
        while let Some(line) = self.decoder.next_line() {
            match line {
                Ok(line) => {
                    self.line_bytes += line.len();
                    self.lines.push(line);
                }
                Err(e) => self.end_with(Some(e)),
            }
        }
    }

    /// Ends the input: the last line (if any), then `error` (if any), come after every
    /// line read before.
    fn end_with(&mut self, error: Option<Error>) {
        self.ended = true;
        let last = self.decoder.finish_line();
        self.decode_inline();
        let mut tail = Vec::new();
        if let Some(line) = last {
            tail.push(decode_last_event(self.decoder.framing(), &line, &self.what));
        }
        tail.extend(error.map(Err));
        if !tail.is_empty() {
            self.batches.push_back(Batch::Decoded(tail.into_iter()));
        }
    }

    /// Decodes the waiting lines on this task.
    fn decode_inline(&mut self) {
        if !self.lines.is_empty() {
            let events = decode_lines(self.decoder.framing(), &self.lines, &self.what);
            self.lines.clear();
            self.line_bytes = 0;
            self.batches.push_back(Batch::Decoded(events.into_iter()));
        }
    }

    /// Sends the waiting lines to be decoded, if the rules allow: see the module docs.
    /// Returns whether they were taken.
    fn dispatch(&mut self) -> bool {
        if self.lines.is_empty() || self.batches.len() > decoders() {
            return false;
        }
        if self.decoding == 0 && self.lines.len() < INLINE_LINES {
            self.decode_inline();
            return true;
        }
        let runtime = tokio::runtime::Handle::try_current();
        match (runtime, Slot::acquire()) {
            (Ok(runtime), Some(slot)) => {
                let lines = std::mem::take(&mut self.lines);
                self.line_bytes = 0;
                let what = Arc::clone(&self.what);
                let framing = self.decoder.framing();
                let handle = spawn_blocking(&runtime, move || {
                    let events = decode_lines(framing, &lines, &what);
                    drop(slot);
                    events
                });
                self.batches.push_back(Batch::Decoding(handle));
                self.decoding += 1;
                true
            }
            _ if self.decoding == 0 => {
                self.decode_inline();
                true
            }
            _ => false,
        }
    }

    /// Reads what the body has ready, sending full batches to decoding as they fill.
    /// `Pending` when the body has nothing more for now; `Ready` when it ended or reading
    /// must wait for a batch to be decoded.
    fn read(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        while !self.ended {
            if self.batch_full() && !self.dispatch() {
                return Poll::Ready(());
            }
            match ready!(Pin::new(&mut self.body).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        self.decoder.feed(data);
                        self.take_lines();
                    }
                }
                Some(Err(e)) => {
                    let e = (self.body_error)(e);
                    self.end_with(Some(e));
                }
                None => self.end_with(None),
            }
        }
        Poll::Ready(())
    }
}

/// Decodes a batch of lines (or frames), in order.
fn decode_lines<K: DeserializeOwned + 'static>(
    framing: Framing,
    lines: &[Bytes],
    what: &str,
) -> Vec<Result<WatchEvent<K>>> {
    lines
        .iter()
        .map(|line| framing.decode(line, what))
        .collect()
}

impl<K, B, F> Stream for DecodedWatch<K, B, F>
where
    K: DeserializeOwned + Send + 'static,
    B: Body<Data = Bytes> + Unpin,
    F: FnMut(B::Error) -> Error + Unpin,
{
    type Item = Result<WatchEvent<K>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        // Keep the decoders busy while the consumer takes decoded events.
        if !this.ended && this.batches.len() <= decoders() {
            let _ = this.read(cx);
        }
        loop {
            match this.batches.front_mut() {
                Some(Batch::Decoded(events)) => match events.next() {
                    Some(event) => return Poll::Ready(Some(event)),
                    None => {
                        this.batches.pop_front();
                        continue;
                    }
                },
                Some(Batch::Decoding(handle)) => {
                    if let Poll::Ready(joined) = Pin::new(handle).poll(cx) {
                        let events = joined.unwrap_or_else(|e| {
                            vec![Err(Error::Request(format!(
                                "decoding watch events of {}: {e}",
                                this.what
                            )))]
                        });
                        this.batches[0] = Batch::Decoded(events.into_iter());
                        this.decoding -= 1;
                        continue;
                    }
                }
                None => {}
            }
            // Nothing to give yet: read, and decode what was read.
            let read = this.read(cx);
            if this.dispatch() {
                continue;
            }
            if read.is_ready() && this.ended && this.batches.is_empty() {
                return Poll::Ready(None);
            }
            if read.is_pending() || this.decoding > 0 {
                // Woken by the body or by the first batch being decoded.
                return Poll::Pending;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::atomic::AtomicUsize;

    use futures_util::StreamExt;
    use http_body_util::StreamBody;
    use hyper::body::Frame;
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn line(i: usize) -> String {
        format!(
            r#"{{"type":"ADDED","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}","resourceVersion":"{i}"}}}}}}"#
        ) + "\n"
    }

    type Chunks = futures_util::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, String>>>;

    /// A body sending `chunks` as they are, then ending.
    fn body(chunks: Vec<Result<Vec<u8>, String>>) -> StreamBody<Chunks> {
        let frames: Vec<_> = chunks
            .into_iter()
            .map(|c| c.map(|b| Frame::data(Bytes::from(b))))
            .collect();
        StreamBody::new(futures_util::stream::iter(frames))
    }

    fn events<B>(body: B) -> DecodedWatch<ConfigMap, B, impl FnMut(B::Error) -> Error + Unpin>
    where
        B: Body<Data = Bytes> + Unpin,
        B::Error: std::fmt::Display,
    {
        DecodedWatch::new(body, WatchDecoder::new("configmaps"), |e: B::Error| {
            Error::Request(format!("transport: {e}"))
        })
    }

    fn names(results: &[Result<WatchEvent<ConfigMap>>]) -> Vec<String> {
        results
            .iter()
            .map(|r| match r {
                Ok(WatchEvent::Added(cm)) => cm.metadata.name.clone().unwrap(),
                Ok(other) => format!("{other:?}"),
                Err(e) => format!("error: {e}"),
            })
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn events_decoded_in_parallel_batches_come_out_in_stream_order() {
        let n = 20 * BATCH_LINES + 3;
        let all: String = (0..n).map(line).collect();
        // One large chunk (batches on the blocking pool) and 7-byte chunks (lines
        // completed one by one).
        for chunk in [all.len(), 7] {
            let chunks = all
                .as_bytes()
                .chunks(chunk)
                .map(|c| Ok(c.to_vec()))
                .collect();
            let got: Vec<_> = events(body(chunks)).collect().await;
            let want: Vec<_> = (0..n).map(|i| format!("cm-{i}")).collect();
            assert_eq!(names(&got), want, "chunks of {chunk} bytes");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_malformed_line_is_an_error_in_its_place_and_the_stream_goes_on() {
        let mut lines: Vec<String> = (0..BATCH_LINES * 3).map(line).collect();
        lines.insert(100, "{\"type\":\"ADDED\",\"object\":[]}\n".into());
        let all = lines.concat().into_bytes();
        let got: Vec<_> = events(body(vec![Ok(all)])).collect().await;
        let got = names(&got);
        assert_eq!(got.len(), BATCH_LINES * 3 + 1);
        assert_eq!(got[99], "cm-99");
        assert!(got[100].starts_with("error: "), "{}", got[100]);
        assert_eq!(got[101], "cm-100");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_transport_error_comes_after_every_event_before_it_and_ends_the_stream() {
        let all: String = (0..BATCH_LINES * 4).map(line).collect();
        let (complete, cut) = all.split_at(all.len() - 10);
        let chunks = vec![
            Ok(complete.as_bytes().to_vec()),
            Err("connection reset".to_string()),
            Ok(cut.as_bytes().to_vec()),
        ];
        let got = names(&events(body(chunks)).collect::<Vec<_>>().await);
        let last = BATCH_LINES * 4 - 1;
        assert_eq!(got.len(), last + 2, "{:?}", &got[got.len() - 2..]);
        assert_eq!(got[last - 1], format!("cm-{}", last - 1));
        // The last line was cut by the error: reported as ended mid-event, then the error.
        assert!(
            got[last].contains("stream ended mid-event"),
            "{}",
            got[last]
        );
        assert!(
            got[last + 1].ends_with("transport: connection reset"),
            "{}",
            got[last + 1]
        );
    }

    #[tokio::test]
    async fn a_line_over_the_limit_ends_the_stream_after_the_events_before_it() {
        let mut all: String = (0..3).map(line).collect();
        all.push_str(&"x".repeat(2048));
        let decoder = WatchDecoder::new("configmaps").with_max_event_bytes(1024);
        let stream = DecodedWatch::<ConfigMap, _, _>::new(
            body(vec![Ok(all.into_bytes()), Ok(line(3).into_bytes())]),
            decoder,
            |e: String| Error::Request(e),
        );
        let got = names(&stream.collect::<Vec<_>>().await);
        assert_eq!(got[..3], ["cm-0", "cm-1", "cm-2"]);
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(got[3].contains("1024"), "{}", got[3]);
    }

    /// A body of `frames` single-line frames that counts the frames read.
    struct Counted {
        read: Arc<AtomicUsize>,
        frames: usize,
    }

    impl Body for Counted {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<std::result::Result<Frame<Bytes>, Infallible>>> {
            let i = self.read.fetch_add(1, Ordering::SeqCst);
            Poll::Ready((i < self.frames).then(|| Ok(Frame::data(Bytes::from(line(i))))))
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_consumer_that_stops_taking_events_stops_the_reading() {
        let read = Arc::new(AtomicUsize::new(0));
        let body = Counted {
            read: Arc::clone(&read),
            frames: 1_000_000,
        };
        let mut stream = events(body);
        let first = stream.next().await;
        assert_eq!(names(&[first.unwrap()]), ["cm-0"]);
        let bound = (decoders() + 3) * BATCH_LINES;
        let frames_read = read.load(Ordering::SeqCst);
        assert!(
            frames_read <= bound,
            "{frames_read} lines read for one taken (bound {bound})"
        );
        // And everything read comes out, in order, when the consumer goes on.
        let next: Vec<_> = stream.take(3 * BATCH_LINES).collect().await;
        let want: Vec<_> = (1..=3 * BATCH_LINES).map(|i| format!("cm-{i}")).collect();
        assert_eq!(names(&next), want);
    }
}
