//! Event recording (client-go's `tools/record`): a controller reports what it did to an
//! object as core/v1 `Event`s without ever waiting for the API server, and the events reach
//! the server deduplicated, aggregated and rate-limited per object, on a best-effort basis.
//!
//! [`EventRecorder`]s (one per reporting [`EventSource`]) put events on the queue of an
//! [`EventBroadcaster`]; the broadcaster hands each event to every watcher started on it: a
//! sink writer ([`start_recording_to_sink`](EventBroadcaster::start_recording_to_sink),
//! usually with a [`ClientsetSink`]) or a structured logger
//! ([`start_structured_logging`](EventBroadcaster::start_structured_logging)).
//!
//! # Contract
//!
//! - **Recording never holds up the caller.** [`EventRecorder::event`], `eventf` and
//!   `annotated_event` never block and never await; any number of clones of a recorder may
//!   call them at once, from any task or thread. Each call builds the whole Event at once:
//!   `involvedObject` (kind, apiVersion, name, namespace, uid, resourceVersion of the
//!   object), reason, message, type, source, `reportingComponent` and
//!   `reportingInstance` (the source's component and host), `firstTimestamp` =
//!   `lastTimestamp` = now, count 1, in the object's namespace (`"default"` for
//!   cluster-scoped objects) and named `<object name>.<hex>`, the hex being the time in
//!   nanoseconds, unique within the process. The type is [`EventType::Normal`] or
//!   [`EventType::Warning`]: there is no other.
//! - **What is dropped, and when.** The broadcaster's queue holds
//!   [`queue_capacity`](BroadcasterOptions::queue_capacity) events (1000); an event that
//!   finds it full is dropped, counted in [`EventBroadcaster::dropped`] and logged as a
//!   warning. One task hands each queued event to every watcher through the watcher's own
//!   buffer of the same capacity; a watcher whose buffer is full (a slow sink) loses the
//!   event, counted and logged the same way, and the other watchers are not affected.
//!   Events recorded while no watcher is started reach nobody. Events recorded after
//!   [`shutdown`](EventBroadcaster::shutdown) are discarded.
//! - **Correlation.** Each sink writer runs the events, in the order they were recorded,
//!   through its own correlator (client-go's `EventCorrelator`; settings in
//!   [`CorrelatorOptions`]):
//!   1. *Spam filter*: a token bucket per source (component, host) and object (kind,
//!      namespace, name, uid, apiVersion) lets 25 events through at once and then one
//!      every 5 minutes; an event with no token is dropped, counted in
//!      [`EventBroadcaster::spam_filtered`] and logged at debug level. It leaves no trace
//!      in the two steps below.
//!   2. *Aggregation*: events with the same source, object, type and reason but different
//!      messages are similar. Once a group of similar events, with no gap of more than
//!      10 minutes between two of them, reaches its 10th distinct message, that event and
//!      every later one with a new message are replaced by one aggregate event whose
//!      message is `"(combined from similar events): "` + the message; the aggregate is
//!      counted like any other event (step 3), so later ones patch it. The first 9
//!      messages keep being written as they are. (client-go forgets an arbitrary one of
//!      the 10; this module keeps the first 9.)
//!   3. *Counting*: an event equal to one already written (same source, object, type,
//!      reason and message, within the last 4096 distinct events) is not created again:
//!      the existing Event is patched with `count` + 1, the new `lastTimestamp` and
//!      message, keeping its name and `firstTimestamp`. When the patch finds the Event
//!      deleted, it is created again.
//! - **Writes and retries.** A sink writer writes one event at a time. A failed write is
//!   tried again up to [`max_tries_per_event`](BroadcasterOptions::max_tries_per_event)
//!   times in all (12), [`retry_interval`](BroadcasterOptions::retry_interval) apart
//!   (10 s; the first wait is a random part of it), when the error may heal: transport
//!   errors, timeouts, 429 and 5xx. Other errors end the event's tries: AlreadyExists
//!   quietly (debug log); other 4xx, requests that cannot be built and answers that cannot
//!   be read with an error log. Events behind a retrying write wait in the writer's
//!   buffer, and are dropped if it fills.
//! - **Shutdown.** [`EventBroadcaster::shutdown`] stops accepting events, delivers every
//!   queued one, and joins the broadcaster's tasks, all within
//!   [`shutdown_timeout`](BroadcasterOptions::shutdown_timeout) (5 s); tasks still busy
//!   then are cancelled and what they hold is lost. Without a shutdown, the tasks end once
//!   every broadcaster and recorder handle is dropped and the queued events are written.
//! - Nothing here panics on what it is given; [`EventBroadcaster::new`] and the `start_*`
//!   methods start tokio tasks and so must run inside a tokio runtime. The correlator and
//!   the retries use tokio's clock (tests can pause it); event timestamps are wall-clock
//!   time.
//!
//! ```no_run
//! # async fn demo(pod: k8s_openapi::api::core::v1::Pod) -> kubekit::rest::Result<()> {
//! use kubekit::clientset::Clientset;
//! use kubekit::record::{ClientsetSink, EventBroadcaster, EventSource, EventType};
//! use kubekit::rest::RestConfig;
//!
//! let clientset = Clientset::new(&RestConfig::infer().await?)?;
//! let broadcaster = EventBroadcaster::new();
//! broadcaster.start_recording_to_sink(ClientsetSink::new(clientset));
//! broadcaster.start_structured_logging();
//! let recorder = broadcaster.new_recorder(EventSource::new("app-controller"));
//!
//! recorder.event(&pod, EventType::Normal, "Synced", "Pod synced successfully");
//! let (ready, wanted) = (2, 3);
//! recorder.eventf(
//!     &pod,
//!     EventType::Warning,
//!     "NotReady",
//!     format_args!("{ready} of {wanted} containers ready"),
//! );
//!
//! // Before the process exits: write what is still queued.
//! broadcaster.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod broadcaster;
mod correlator;
mod recorder;
mod shared;
mod sink;
#[cfg(test)]
mod tests;

pub use broadcaster::EventBroadcaster;
pub use recorder::{EventRecorder, EventSource, EventType};
pub use shared::{BroadcasterOptions, CorrelatorOptions};
pub use sink::{ClientsetSink, EventSink};
