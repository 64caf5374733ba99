//! [`EventSink`], where events are written, [`ClientsetSink`], the API server as one, and
//! the sink writer task: correlation, then writes with retries.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Serialize;
use tokio::sync::mpsc;

use super::correlator::{Correlated, Correlator};
use super::recorder::DEFAULT_NAMESPACE;
use super::shared::{BroadcasterOptions, Counters, ObjectRef, text};
use kubekit_client::clientset::{
    Clientset, CreateOptions, PatchBody, PatchOptions, ResourceClient,
};
use kubekit_client::rest::{Error, Result};

/// Where a sink writer writes events: usually the API server ([`ClientsetSink`]), or a
/// test double. Calls come from one task, one at a time.
pub trait EventSink: Send + Sync + 'static {
    /// Creates `event`, in its own namespace, and returns it as stored.
    fn create(&self, event: &Event) -> BoxFuture<'_, Result<Event>>;

    /// Applies `patch`, a strategic merge patch setting `count`, `lastTimestamp` and
    /// `message`, to the event named like `event`, in `event`'s namespace.
    fn patch(&self, event: &Event, patch: &serde_json::Value) -> BoxFuture<'_, Result<Event>>;
}

/// Writes core/v1 Events to the API server, in each event's namespace (`"default"` when it
/// has none).
#[derive(Clone, Debug)]
pub struct ClientsetSink {
    clientset: Clientset,
}

impl ClientsetSink {
    /// A sink writing through `clientset`.
    pub fn new(clientset: Clientset) -> Self {
        Self { clientset }
    }

    fn events(&self, event: &Event) -> ResourceClient<Event> {
        let namespace = event
            .metadata
            .namespace
            .as_deref()
            .unwrap_or(DEFAULT_NAMESPACE);
        self.clientset.core_v1().events(namespace)
    }
}

impl EventSink for ClientsetSink {
    fn create(&self, event: &Event) -> BoxFuture<'_, Result<Event>> {
        let (events, event) = (self.events(event), event.clone());
        Box::pin(async move { events.create(&event, &CreateOptions::default()).await })
    }

    fn patch(&self, event: &Event, patch: &serde_json::Value) -> BoxFuture<'_, Result<Event>> {
        let events = self.events(event);
        let name = text(&event.metadata.name).to_owned();
        let patch = PatchBody::Strategic(patch.clone());
        Box::pin(async move { events.patch(&name, &patch, &PatchOptions::default()).await })
    }
}

/// The body of the patch that counts one more occurrence of an event.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CountPatch<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_timestamp: Option<&'a Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
}

impl<'a> CountPatch<'a> {
    fn of(event: &'a Event) -> Result<serde_json::Value> {
        let patch = CountPatch {
            count: event.count,
            last_timestamp: event.last_timestamp.as_ref(),
            message: event.message.as_deref(),
        };
        serde_json::to_value(patch).map_err(|e| Error::Request(format!("event patch: {e}")))
    }
}

/// A watcher task writing events to a sink.
pub(super) struct SinkWriter<S> {
    sink: S,
    correlator: Correlator,
    max_tries: u32,
    retry_interval: Duration,
    counters: Arc<Counters>,
}

impl<S: EventSink> SinkWriter<S> {
    pub(super) fn new(sink: S, opts: &BroadcasterOptions, counters: Arc<Counters>) -> Self {
        Self {
            sink,
            correlator: Correlator::new(opts.correlator.clone()),
            max_tries: opts.max_tries_per_event.max(1),
            retry_interval: opts.retry_interval,
            counters,
        }
    }

    /// Correlates and writes every event of `events`, in order, until the buffer closes.
    pub(super) async fn run(mut self, mut events: mpsc::Receiver<Arc<Event>>) {
        while let Some(event) = events.recv().await {
            match self.correlator.correlate(&event) {
                Some(correlated) => self.write(correlated).await,
                None => self.counters.filter_event(&event),
            }
        }
    }

    /// Writes one event, retrying while the error may heal and tries are left.
    async fn write(&self, mut correlated: Correlated) {
        let mut tries = 1;
        loop {
            let Err(err) = self.try_write(&mut correlated).await else {
                return;
            };
            let event = &correlated.event;
            let object = ObjectRef(&event.involved_object);
            let name = text(&event.metadata.name);
            if err.is_already_exists() {
                tracing::debug!(%object, name, "event already exists (will not retry): {err}");
                return;
            }
            if !err.is_transient() {
                tracing::error!(%object, name, "event rejected (will not retry): {err}");
                return;
            }
            if tries >= self.max_tries {
                tracing::error!(%object, name, tries, "unable to write event, giving up: {err}");
                return;
            }
            tracing::warn!(%object, name, tries, "unable to write event (will retry): {err}");
            tokio::time::sleep(self.retry_delay(tries)).await;
            tries += 1;
        }
    }

    /// One attempt: a patch of the event written before, or a create. A patch that finds
    /// the event deleted turns into a create of it.
    async fn try_write(&self, correlated: &mut Correlated) -> Result<()> {
        if correlated.update_existing {
            let patch = CountPatch::of(&correlated.event)?;
            match self.sink.patch(&correlated.event, &patch).await {
                Err(err) if err.is_not_found() => correlated.update_existing = false,
                written => return written.map(drop),
            }
        }
        correlated.event.metadata.resource_version = None;
        self.sink.create(&correlated.event).await.map(drop)
    }

    /// The wait after the `tries`-th failed attempt: a random part of the interval after
    /// the first, the whole interval after the others.
    fn retry_delay(&self, tries: u32) -> Duration {
        if tries == 1 {
            self.retry_interval.mul_f64(fastrand::f64())
        } else {
            self.retry_interval
        }
    }
}
