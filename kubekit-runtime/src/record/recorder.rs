//! [`EventRecorder`]: builds a core/v1 `Event` about an object and queues it, without
//! waiting for anything.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Event, EventSource as ApiEventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use tokio::sync::mpsc::{self, error::TrySendError};

use super::shared::{Counters, ObjectRef, event_name, text};

/// Where events about cluster-scoped objects are written.
pub(super) const DEFAULT_NAMESPACE: &str = "default";

/// The type of an event. The API knows only these two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Routine: the object was created, scaled, synced, …
    Normal,
    /// Something may need a human: a failure, a conflict, an invalid spec, …
    Warning,
}

impl EventType {
    /// The API's spelling: `"Normal"` or `"Warning"`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who reports events: a component (usually the controller's name) and, optionally, the
/// host it runs on. It becomes the event's `source`, `reportingComponent` and
/// `reportingInstance`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct EventSource {
    /// The reporting component, e.g. `"app-controller"`.
    pub component: String,
    /// The host (node or pod) the component runs on, if worth telling.
    pub host: Option<String>,
}

impl EventSource {
    /// The source `component`, with no host.
    pub fn new(component: impl Into<String>) -> Self {
        Self {
            component: component.into(),
            host: None,
        }
    }
}

/// Records events about objects on behalf of one [`EventSource`]; made by
/// [`EventBroadcaster::new_recorder`](super::EventBroadcaster::new_recorder).
///
/// Cheap to clone; every method takes `&self`, never blocks and never awaits, so it may be
/// called from any task or thread, in async or plain code. See the
/// [module docs](super) for what happens to an event afterwards.
#[derive(Clone, Debug)]
pub struct EventRecorder {
    source: Arc<EventSource>,
    queue: mpsc::Sender<Arc<Event>>,
    counters: Arc<Counters>,
}

impl EventRecorder {
    pub(super) fn new(
        source: EventSource,
        queue: mpsc::Sender<Arc<Event>>,
        counters: Arc<Counters>,
    ) -> Self {
        Self {
            source: Arc::new(source),
            queue,
            counters,
        }
    }

    /// The source this recorder reports as.
    pub fn source(&self) -> &EventSource {
        &self.source
    }

    /// Records that `reason` happened to `obj`, explained by `message`. `reason` is short,
    /// UpperCamelCase and machine-readable (`"FailedCreate"`); `message` is for humans.
    pub fn event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        kind: EventType,
        reason: &str,
        message: &str,
    ) {
        self.annotated_event(obj, BTreeMap::new(), kind, reason, message);
    }

    /// [`event`](Self::event) with a message built by `format_args!`.
    pub fn eventf<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        kind: EventType,
        reason: &str,
        args: fmt::Arguments<'_>,
    ) {
        self.event(obj, kind, reason, &args.to_string());
    }

    /// [`event`](Self::event) with `annotations` on the Event object.
    pub fn annotated_event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        annotations: BTreeMap<String, String>,
        kind: EventType,
        reason: &str,
        message: &str,
    ) {
        let event = make_event(obj, &self.source, annotations, kind, reason, message);
        match self.queue.try_send(Arc::new(event)) {
            Ok(()) => {}
            Err(TrySendError::Full(event)) => self.counters.drop_event(&event, "event queue"),
            Err(TrySendError::Closed(event)) => tracing::debug!(
                object = %ObjectRef(&event.involved_object),
                reason,
                "event broadcaster is shut down; event discarded"
            ),
        }
    }
}

/// The Event `source` reports about `obj`, as client-go's recorder makes it.
fn make_event<K: Resource<DynamicType = ()>>(
    obj: &K,
    source: &EventSource,
    annotations: BTreeMap<String, String>,
    kind: EventType,
    reason: &str,
    message: &str,
) -> Event {
    let meta = obj.meta();
    let now = Time(Timestamp::now());
    let namespace = meta
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
    Event {
        metadata: ObjectMeta {
            name: Some(event_name(text(&meta.name))),
            namespace: Some(namespace),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some(K::api_version(&()).into_owned()),
            kind: Some(K::kind(&()).into_owned()),
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            field_path: None,
        },
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        type_: Some(kind.as_str().to_owned()),
        source: Some(ApiEventSource {
            component: Some(source.component.clone()),
            host: source.host.clone(),
        }),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        count: Some(1),
        reporting_component: Some(source.component.clone()),
        reporting_instance: source.host.clone(),
        ..Event::default()
    }
}
