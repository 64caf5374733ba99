//! [`EventBroadcaster`]: the queue between recorders and watchers, the task that fans
//! events out, and the watchers (sink writers, structured loggers).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use k8s_openapi::api::core::v1::Event;
use parking_lot::Mutex;
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::recorder::{EventRecorder, EventSource};
use super::shared::{BroadcasterOptions, Counters, ObjectRef, text};
use super::sink::{EventSink, SinkWriter};

/// Receives the events of its recorders and hands each to every started watcher; see the
/// [module docs](super).
///
/// A cheap handle (an `Arc` inside): clones share the queue, the watchers and the counters.
#[derive(Clone, Debug)]
pub struct EventBroadcaster {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    opts: BroadcasterOptions,
    /// `opts.queue_capacity`, at least 1.
    capacity: usize,
    queue: mpsc::Sender<Arc<Event>>,
    watchers: Arc<Mutex<Watchers>>,
    /// Cancelled by shutdown: the distributor stops taking new events.
    closing: CancellationToken,
    counters: Arc<Counters>,
}

/// The started watchers, and every task shutdown must join.
#[derive(Debug, Default)]
struct Watchers {
    buffers: Vec<mpsc::Sender<Arc<Event>>>,
    tasks: Vec<JoinHandle<()>>,
    closed: bool,
}

impl Default for EventBroadcaster {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBroadcaster {
    /// A broadcaster with the default [`BroadcasterOptions`].
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime: the broadcaster starts its distributor task.
    pub fn new() -> Self {
        Self::with_options(BroadcasterOptions::default())
    }

    /// A broadcaster with `opts`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime: the broadcaster starts its distributor task.
    pub fn with_options(opts: BroadcasterOptions) -> Self {
        let capacity = opts.queue_capacity.max(1);
        let (queue, incoming) = mpsc::channel(capacity);
        let watchers = Arc::new(Mutex::new(Watchers::default()));
        let closing = CancellationToken::new();
        let counters = Arc::new(Counters::default());
        let distributor = tokio::spawn(distribute(
            incoming,
            Arc::clone(&watchers),
            closing.clone(),
            Arc::clone(&counters),
        ));
        watchers.lock().tasks.push(distributor);
        Self {
            inner: Arc::new(Inner {
                opts,
                capacity,
                queue,
                watchers,
                closing,
                counters,
            }),
        }
    }

    /// Starts a task that writes every event to `sink`, through its own correlator (spam
    /// filter, aggregation, counting) and with retries. Each call starts one more writer;
    /// after [`shutdown`](Self::shutdown) it starts nothing.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start_recording_to_sink(&self, sink: impl EventSink) {
        let writer = SinkWriter::new(sink, &self.inner.opts, Arc::clone(&self.inner.counters));
        self.start_watcher("sink writer", move |events| writer.run(events));
    }

    /// Starts a task that logs every event through `tracing`, at info level: the object,
    /// its kind and apiVersion, and the event's type, reason and message. After
    /// [`shutdown`](Self::shutdown) it starts nothing.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start_structured_logging(&self) {
        self.start_watcher("structured logger", log_events);
    }

    /// A recorder of events reported by `source`, feeding this broadcaster.
    pub fn new_recorder(&self, source: EventSource) -> EventRecorder {
        EventRecorder::new(
            source,
            self.inner.queue.clone(),
            Arc::clone(&self.inner.counters),
        )
    }

    /// Events lost because a queue was full: the broadcaster's queue, or the buffer of a
    /// watcher (counted once per watcher that missed the event).
    pub fn dropped(&self) -> u64 {
        self.inner.counters.dropped.load(Ordering::Relaxed)
    }

    /// Events a sink writer's spam filter refused (counted once per writer).
    pub fn spam_filtered(&self) -> u64 {
        self.inner.counters.spam_filtered.load(Ordering::Relaxed)
    }

    /// Stops accepting events, delivers those already queued, and joins the broadcaster's
    /// tasks. Delivery is bounded by [`BroadcasterOptions::shutdown_timeout`]: tasks still
    /// busy then (a sink that hangs or keeps failing) are cancelled and what they hold is
    /// lost. Later calls return at once.
    pub async fn shutdown(&self) {
        let tasks = {
            let mut watchers = self.inner.watchers.lock();
            watchers.closed = true;
            std::mem::take(&mut watchers.tasks)
        };
        self.inner.closing.cancel();
        let deadline = tokio::time::sleep(self.inner.opts.shutdown_timeout);
        tokio::pin!(deadline);
        for mut task in tasks {
            let joined = tokio::select! {
                joined = &mut task => joined,
                () = &mut deadline => {
                    tracing::warn!(
                        timeout = ?self.inner.opts.shutdown_timeout,
                        "event recording did not finish in time; undelivered events are lost"
                    );
                    task.abort();
                    task.await
                }
            };
            if let Err(err) = joined
                && err.is_panic()
            {
                tracing::error!("event recording task panicked: {err}");
            }
        }
    }

    /// Adds a watcher with its own buffer and starts its task, `run(buffer)`, unless the
    /// broadcaster is shut down.
    fn start_watcher<F>(&self, what: &str, run: impl FnOnce(mpsc::Receiver<Arc<Event>>) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let mut watchers = self.inner.watchers.lock();
        if watchers.closed {
            tracing::warn!("event broadcaster is shut down; {what} not started");
            return;
        }
        let (buffer, events) = mpsc::channel(self.inner.capacity);
        watchers.buffers.push(buffer);
        watchers.tasks.push(tokio::spawn(run(events)));
    }
}

/// The distributor: hands every queued event to each watcher until shutdown (or until every
/// recorder and broadcaster handle is gone), then drains the queue and lets the watchers
/// finish by dropping their buffers' senders.
async fn distribute(
    mut incoming: mpsc::Receiver<Arc<Event>>,
    watchers: Arc<Mutex<Watchers>>,
    closing: CancellationToken,
    counters: Arc<Counters>,
) {
    let fan_out = |event: Arc<Event>| {
        for buffer in &watchers.lock().buffers {
            if let Err(TrySendError::Full(_)) = buffer.try_send(Arc::clone(&event)) {
                counters.drop_event(&event, "watcher buffer");
            }
        }
    };
    while let Some(Some(event)) = closing.run_until_cancelled(incoming.recv()).await {
        fan_out(event);
    }
    incoming.close();
    while let Some(event) = incoming.recv().await {
        fan_out(event);
    }
    watchers.lock().buffers.clear();
}

/// The structured logger's task.
async fn log_events(mut events: mpsc::Receiver<Arc<Event>>) {
    while let Some(event) = events.recv().await {
        let object = &event.involved_object;
        tracing::info!(
            object = %ObjectRef(object),
            kind = text(&object.kind),
            api_version = text(&object.api_version),
            event_type = text(&event.type_),
            reason = text(&event.reason),
            message = text(&event.message),
            "Event occurred"
        );
    }
}
