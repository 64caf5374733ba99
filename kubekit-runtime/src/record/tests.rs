//! The whole pipeline, recorder to sink, under tokio's paused clock.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Status};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::*;
use kubekit_client::rest::{Error, Result};

/// A sink call, as the test double saw it.
#[derive(Debug, Clone)]
enum Call {
    Create(Event),
    Patch(Event, Value),
}

impl Call {
    fn event(&self) -> &Event {
        match self {
            Call::Create(event) | Call::Patch(event, _) => event,
        }
    }

    fn message(&self) -> &str {
        self.event().message.as_deref().unwrap_or_default()
    }
}

/// An in-memory sink: records every call and answers from a script (`Some(error)` fails
/// the call, `None` or an empty script succeeds).
#[derive(Clone, Default)]
struct FakeSink {
    calls: Arc<Mutex<Vec<(Instant, Call)>>>,
    script: Arc<Mutex<VecDeque<Option<Error>>>>,
}

impl FakeSink {
    fn scripted(answers: impl IntoIterator<Item = Option<Error>>) -> Self {
        let sink = Self::default();
        sink.script.lock().extend(answers);
        sink
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().iter().map(|(_, c)| c.clone()).collect()
    }

    fn call_times(&self) -> Vec<Instant> {
        self.calls.lock().iter().map(|(at, _)| *at).collect()
    }

    fn answer(&self, call: Call) -> BoxFuture<'_, Result<Event>> {
        let stored = call.event().clone();
        self.calls.lock().push((Instant::now(), call));
        let answer = match self.script.lock().pop_front().flatten() {
            Some(err) => Err(err),
            None => Ok(stored),
        };
        Box::pin(async move { answer })
    }
}

impl EventSink for FakeSink {
    fn create(&self, event: &Event) -> BoxFuture<'_, Result<Event>> {
        self.answer(Call::Create(event.clone()))
    }

    fn patch(&self, event: &Event, patch: &Value) -> BoxFuture<'_, Result<Event>> {
        self.answer(Call::Patch(event.clone(), patch.clone()))
    }
}

/// A sink whose writes never finish.
struct StuckSink;

impl EventSink for StuckSink {
    fn create(&self, _: &Event) -> BoxFuture<'_, Result<Event>> {
        Box::pin(std::future::pending())
    }

    fn patch(&self, _: &Event, _: &Value) -> BoxFuture<'_, Result<Event>> {
        Box::pin(std::future::pending())
    }
}

fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("shop".into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("42".into()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

fn api_error(code: i32, reason: &str) -> Error {
    let status = Status {
        code: Some(code),
        reason: Some(reason.into()),
        ..Status::default()
    };
    Error::from_status("POST", "/api/v1/namespaces/shop/events", status)
}

fn transport_error() -> Error {
    Error::Transport {
        verb: "POST".into(),
        url: "/api/v1/namespaces/shop/events".into(),
        source: "connection refused".into(),
    }
}

/// A broadcaster writing to a fresh [`FakeSink`] (scripted with `answers`), and a recorder.
fn pipeline(
    opts: BroadcasterOptions,
    answers: impl IntoIterator<Item = Option<Error>>,
) -> (EventBroadcaster, EventRecorder, FakeSink) {
    let broadcaster = EventBroadcaster::with_options(opts);
    let sink = FakeSink::scripted(answers);
    broadcaster.start_recording_to_sink(sink.clone());
    let recorder = broadcaster.new_recorder(EventSource::new("app-controller"));
    (broadcaster, recorder, sink)
}

/// Lets every task run until all of them wait.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

#[tokio::test(start_paused = true)]
async fn event_describes_the_object_and_the_source() {
    let broadcaster = EventBroadcaster::new();
    let sink = FakeSink::default();
    broadcaster.start_recording_to_sink(sink.clone());
    let recorder = broadcaster.new_recorder(EventSource {
        component: "app-controller".into(),
        host: Some("node-1".into()),
    });
    let node = Node {
        metadata: ObjectMeta {
            name: Some("node-7".into()),
            ..ObjectMeta::default()
        },
        ..Node::default()
    };

    recorder.event(&pod("web-0"), EventType::Warning, "FailedSync", "no luck");
    recorder.eventf(
        &node,
        EventType::Normal,
        "Cordoned",
        format_args!("{} pods evicted", 3),
    );
    let annotations = BTreeMap::from([("team".to_owned(), "shop".to_owned())]);
    recorder.annotated_event(
        &pod("web-0"),
        annotations.clone(),
        EventType::Normal,
        "A",
        "b",
    );
    broadcaster.shutdown().await;

    let calls = sink.calls();
    let [
        Call::Create(pod_event),
        Call::Create(node_event),
        Call::Create(annotated),
    ] = &calls[..]
    else {
        panic!("expected three creates, got {calls:?}");
    };

    let object = &pod_event.involved_object;
    assert_eq!(object.kind.as_deref(), Some("Pod"));
    assert_eq!(object.api_version.as_deref(), Some("v1"));
    assert_eq!(object.name.as_deref(), Some("web-0"));
    assert_eq!(object.namespace.as_deref(), Some("shop"));
    assert_eq!(object.uid.as_deref(), Some("uid-web-0"));
    assert_eq!(object.resource_version.as_deref(), Some("42"));
    assert_eq!(object.field_path, None);
    assert_eq!(pod_event.reason.as_deref(), Some("FailedSync"));
    assert_eq!(pod_event.message.as_deref(), Some("no luck"));
    assert_eq!(pod_event.type_.as_deref(), Some("Warning"));
    let source = pod_event.source.as_ref().expect("source");
    assert_eq!(source.component.as_deref(), Some("app-controller"));
    assert_eq!(source.host.as_deref(), Some("node-1"));
    assert_eq!(
        pod_event.reporting_component.as_deref(),
        Some("app-controller")
    );
    assert_eq!(pod_event.reporting_instance.as_deref(), Some("node-1"));
    assert_eq!(pod_event.count, Some(1));
    assert!(pod_event.first_timestamp.is_some());
    assert_eq!(pod_event.first_timestamp, pod_event.last_timestamp);
    assert_eq!(pod_event.metadata.namespace.as_deref(), Some("shop"));
    assert_eq!(pod_event.metadata.annotations, None);
    let name = pod_event.metadata.name.as_deref().expect("name");
    let suffix = name.strip_prefix("web-0.").expect("named after the object");
    assert!(
        u64::from_str_radix(suffix, 16).is_ok(),
        "hex suffix: {name}"
    );

    assert_eq!(node_event.involved_object.kind.as_deref(), Some("Node"));
    assert_eq!(node_event.involved_object.namespace, None);
    assert_eq!(node_event.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(node_event.message.as_deref(), Some("3 pods evicted"));
    assert_eq!(
        node_event.type_.as_deref(),
        Some(EventType::Normal.as_str())
    );

    assert_eq!(annotated.metadata.annotations, Some(annotations));
    assert_ne!(
        annotated.metadata.name, pod_event.metadata.name,
        "every event gets its own name"
    );
}

#[tokio::test(start_paused = true)]
async fn full_queue_drops_and_counts_without_blocking() {
    let opts = BroadcasterOptions {
        queue_capacity: 2,
        ..BroadcasterOptions::default()
    };
    let (broadcaster, recorder, sink) = pipeline(opts, []);

    // Nothing has run the distributor yet: the queue takes two events, then refuses.
    for i in 0..5 {
        recorder.event(
            &pod("web-0"),
            EventType::Normal,
            "Tick",
            &format!("tick {i}"),
        );
    }
    assert_eq!(broadcaster.dropped(), 3);

    broadcaster.shutdown().await;
    let messages: Vec<_> = sink
        .calls()
        .iter()
        .map(|c| c.message().to_owned())
        .collect();
    assert_eq!(messages, ["tick 0", "tick 1"]);
}

#[tokio::test(start_paused = true)]
async fn stuck_sink_drops_its_own_events_without_holding_up_other_sinks() {
    let opts = BroadcasterOptions {
        queue_capacity: 2,
        ..BroadcasterOptions::default()
    };
    let (broadcaster, recorder, sink) = pipeline(opts, []);
    broadcaster.start_recording_to_sink(StuckSink);

    for i in 0..6 {
        recorder.event(
            &pod("web-0"),
            EventType::Normal,
            "Tick",
            &format!("tick {i}"),
        );
        settle().await;
    }

    assert_eq!(sink.calls().len(), 6, "the healthy sink got every event");
    // The stuck writer holds one event, buffers two, and loses the other three.
    assert_eq!(broadcaster.dropped(), 3);
    broadcaster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn similar_events_are_combined_from_the_tenth_distinct_message_on() {
    let (broadcaster, recorder, sink) = pipeline(BroadcasterOptions::default(), []);
    let web = pod("web-0");
    for i in 1..=11 {
        recorder.event(&web, EventType::Warning, "BackOff", &format!("attempt {i}"));
    }
    recorder.event(&web, EventType::Warning, "BackOff", "attempt 3");
    broadcaster.shutdown().await;

    let calls = sink.calls();
    assert_eq!(calls.len(), 12);
    for (i, call) in calls[..9].iter().enumerate() {
        assert!(matches!(call, Call::Create(_)), "{call:?}");
        assert_eq!(call.message(), format!("attempt {}", i + 1));
    }

    let Call::Create(aggregate) = &calls[9] else {
        panic!(
            "the 10th distinct message creates the aggregate: {:?}",
            calls[9]
        );
    };
    assert_eq!(
        aggregate.message.as_deref(),
        Some("(combined from similar events): attempt 10")
    );
    assert_eq!(aggregate.count, Some(1));
    assert_eq!(aggregate.reason.as_deref(), Some("BackOff"));
    assert_eq!(aggregate.involved_object, calls[0].event().involved_object);
    let first_names: Vec<_> = calls[..9]
        .iter()
        .map(|c| &c.event().metadata.name)
        .collect();
    assert!(
        !first_names.contains(&&aggregate.metadata.name),
        "a name of its own"
    );

    let Call::Patch(eleventh, patch) = &calls[10] else {
        panic!("the 11th patches the aggregate: {:?}", calls[10]);
    };
    assert_eq!(eleventh.metadata.name, aggregate.metadata.name);
    assert_eq!(eleventh.count, Some(2));
    assert_eq!(
        patch["message"],
        "(combined from similar events): attempt 11"
    );
    assert_eq!(patch["count"], 2);

    let Call::Patch(third_again, _) = &calls[11] else {
        panic!(
            "a message seen before the aggregate is counted: {:?}",
            calls[11]
        );
    };
    assert_eq!(third_again.metadata.name, calls[2].event().metadata.name);
    assert_eq!(third_again.message.as_deref(), Some("attempt 3"));
    assert_eq!(third_again.count, Some(2));
}

#[tokio::test(start_paused = true)]
async fn similar_events_start_over_after_ten_quiet_minutes() {
    let (broadcaster, recorder, sink) = pipeline(BroadcasterOptions::default(), []);
    let web = pod("web-0");
    for i in 1..=9 {
        recorder.event(&web, EventType::Warning, "BackOff", &format!("attempt {i}"));
    }
    settle().await;
    tokio::time::sleep(Duration::from_secs(601)).await;
    recorder.event(&web, EventType::Warning, "BackOff", "attempt 10");
    broadcaster.shutdown().await;

    let calls = sink.calls();
    assert_eq!(calls.len(), 10);
    assert!(matches!(&calls[9], Call::Create(_)), "{:?}", calls[9]);
    assert_eq!(calls[9].message(), "attempt 10");
}

#[tokio::test(start_paused = true)]
async fn identical_events_are_created_once_then_patched_with_increasing_count() {
    let (broadcaster, recorder, sink) = pipeline(BroadcasterOptions::default(), []);
    for _ in 0..3 {
        recorder.event(&pod("web-0"), EventType::Normal, "Synced", "all good");
    }
    broadcaster.shutdown().await;

    let calls = sink.calls();
    let [
        Call::Create(first),
        Call::Patch(second, patch2),
        Call::Patch(third, patch3),
    ] = &calls[..]
    else {
        panic!("expected a create and two patches, got {calls:?}");
    };
    assert_eq!(first.count, Some(1));
    for (event, patch, count) in [(second, patch2, 2), (third, patch3, 3)] {
        assert_eq!(event.metadata.name, first.metadata.name);
        assert_eq!(event.first_timestamp, first.first_timestamp);
        assert_eq!(event.count, Some(count));
        let expected = json!({
            "count": count,
            "lastTimestamp": serde_json::to_value(&event.last_timestamp).expect("time"),
            "message": "all good",
        });
        assert_eq!(patch, &expected);
    }
}

#[tokio::test(start_paused = true)]
async fn patch_of_a_deleted_event_turns_into_a_create() {
    let not_found = Error::not_found("", "events", "web-0.1");
    let (broadcaster, recorder, sink) =
        pipeline(BroadcasterOptions::default(), [None, Some(not_found)]);
    for _ in 0..2 {
        recorder.event(&pod("web-0"), EventType::Normal, "Synced", "all good");
    }
    broadcaster.shutdown().await;

    let calls = sink.calls();
    let [Call::Create(first), Call::Patch(..), Call::Create(again)] = &calls[..] else {
        panic!("expected create, patch, create; got {calls:?}");
    };
    assert_eq!(again.metadata.name, first.metadata.name);
    assert_eq!(again.count, Some(2));
    assert_eq!(again.metadata.resource_version, None);
}

#[tokio::test(start_paused = true)]
async fn spam_filter_lets_25_events_through_then_one_per_five_minutes() {
    let (broadcaster, recorder, sink) = pipeline(BroadcasterOptions::default(), []);
    let web = pod("web-0");
    let record = |reason: String| recorder.event(&web, EventType::Normal, &reason, "spam");

    (0..26).for_each(|i| record(format!("Reason{i}")));
    settle().await;
    assert_eq!(sink.calls().len(), 25);
    assert_eq!(broadcaster.spam_filtered(), 1);

    tokio::time::sleep(Duration::from_secs(300)).await;
    record("Later".into());
    record("TooSoon".into());
    settle().await;
    assert_eq!(sink.calls().len(), 26, "one more token after 5 minutes");
    assert_eq!(broadcaster.spam_filtered(), 2);

    recorder.event(&pod("web-1"), EventType::Normal, "Other", "another object");
    broadcaster.shutdown().await;
    assert_eq!(sink.calls().len(), 27, "each object has its own bucket");
    assert_eq!(broadcaster.dropped(), 0);
}

#[tokio::test(start_paused = true)]
async fn failing_sink_is_retried_until_it_succeeds() {
    let failures = (0..3).map(|_| Some(transport_error()));
    let (broadcaster, recorder, sink) = pipeline(BroadcasterOptions::default(), failures);
    recorder.event(&pod("web-0"), EventType::Normal, "Synced", "all good");
    tokio::time::sleep(Duration::from_secs(60)).await;

    let calls = sink.calls();
    assert_eq!(calls.len(), 4);
    assert!(calls.iter().all(|c| matches!(c, Call::Create(_))));
    let times = sink.call_times();
    let gaps: Vec<_> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps[0] <= Duration::from_secs(10),
        "first wait is random: {gaps:?}"
    );
    for gap in &gaps[1..] {
        assert!(
            *gap >= Duration::from_secs(10) && *gap < Duration::from_secs(11),
            "{gaps:?}"
        );
    }
    broadcaster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn retries_stop_after_max_tries() {
    let opts = BroadcasterOptions {
        max_tries_per_event: 3,
        retry_interval: Duration::from_secs(1),
        ..BroadcasterOptions::default()
    };
    let (broadcaster, recorder, sink) = pipeline(
        opts,
        (0..5).map(|_| Some(api_error(503, "ServiceUnavailable"))),
    );
    recorder.event(&pod("web-0"), EventType::Normal, "Synced", "all good");
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(sink.calls().len(), 3);
    broadcaster.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn only_errors_that_may_heal_are_retried() {
    let cases = [
        (api_error(409, "AlreadyExists"), 1),
        (api_error(403, "Forbidden"), 1),
        (api_error(422, "Invalid"), 1),
        (Error::Request("bad name".into()), 1),
        (api_error(429, "TooManyRequests"), 2),
        (api_error(500, "InternalError"), 2),
        (transport_error(), 2),
    ];
    for (error, expected_calls) in cases {
        let shown = error.to_string();
        let (broadcaster, recorder, sink) = pipeline(BroadcasterOptions::default(), [Some(error)]);
        recorder.event(&pod("web-0"), EventType::Normal, "Synced", "all good");
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(sink.calls().len(), expected_calls, "{shown}");
        broadcaster.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_delivers_queued_events_then_refuses_new_ones() {
    let (broadcaster, recorder, sink) = pipeline(BroadcasterOptions::default(), []);
    broadcaster.start_structured_logging();
    for i in 0..30 {
        recorder.event(&pod(&format!("web-{i}")), EventType::Normal, "Synced", "ok");
    }
    let start = Instant::now();
    broadcaster.shutdown().await;
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "nothing to wait for"
    );
    assert_eq!(sink.calls().len(), 30);

    recorder.event(&pod("web-0"), EventType::Normal, "Late", "after shutdown");
    let late_sink = FakeSink::default();
    broadcaster.start_recording_to_sink(late_sink.clone());
    broadcaster.shutdown().await;
    settle().await;
    assert_eq!(sink.calls().len(), 30);
    assert!(late_sink.calls().is_empty());
    assert_eq!(
        broadcaster.dropped(),
        0,
        "discarded after shutdown, not dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_gives_up_on_a_stuck_sink_after_the_timeout() {
    let broadcaster = EventBroadcaster::new();
    broadcaster.start_recording_to_sink(StuckSink);
    let recorder = broadcaster.new_recorder(EventSource::new("app-controller"));
    recorder.event(&pod("web-0"), EventType::Normal, "Synced", "all good");

    let start = Instant::now();
    broadcaster.shutdown().await;
    let waited = start.elapsed();
    let timeout = BroadcasterOptions::default().shutdown_timeout;
    assert!(
        waited >= timeout && waited < timeout + Duration::from_secs(1),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn tasks_end_when_every_handle_is_dropped() {
    let (broadcaster, recorder, sink) = pipeline(BroadcasterOptions::default(), []);
    recorder.event(&pod("web-0"), EventType::Normal, "Synced", "all good");
    let writer_alive = Arc::downgrade(&sink.calls);
    drop((broadcaster, recorder, sink));
    settle().await;
    assert!(
        writer_alive.upgrade().is_none(),
        "the writer task ended and dropped its sink"
    );
}
