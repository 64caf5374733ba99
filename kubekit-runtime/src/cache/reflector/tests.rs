//! The reflector against a scripted lister-watcher, on paused time.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;

use super::*;
use crate::cache::test_support::{
    Fake, Script, assert_metric_lines, cm, error_event, initial_events_end, status, transport,
};
use crate::cache::{DeltaFifo, DeltaType, Indexer, ListWatch};
use kubekit_client::clientset::ResourceClient;
use kubekit_client::rest::test_server::{Reply, TestServer};
use kubekit_client::rest::{Bookmark, ListPage, ObjectList};

pub(super) struct Harness {
    pub(super) script: Arc<Script>,
    pub(super) fifo: Arc<DeltaFifo<ConfigMap>>,
    pub(super) indexer: Arc<Indexer<ConfigMap>>,
    pub(super) reflector: Arc<Reflector<ConfigMap>>,
    pub(super) cancel: CancellationToken,
    errors: Arc<Mutex<Vec<String>>>,
}

pub(super) fn harness(configure: impl FnOnce(&mut ReflectorOptions<ConfigMap>)) -> Harness {
    let script = Arc::new(Script::default());
    harness_on(Arc::new(Fake(script.clone())), script, configure)
}

/// [`harness`], named `cms`, counting into [`ReflectorMetrics`](crate::cache::ReflectorMetrics)
/// registered in the registry returned.
pub(super) fn metered_harness(
    configure: impl FnOnce(&mut ReflectorOptions<ConfigMap>),
) -> (Harness, prometheus_client::registry::Registry) {
    let metrics = crate::cache::ReflectorMetrics::new();
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    let h = harness(|o| {
        o.name = "cms".into();
        o.metrics = Some(metrics);
        configure(o);
    });
    (h, registry)
}

/// A reflector of ConfigMaps in namespace `ns` served by `server`, over the real client
/// (its default request timeout included), with an unjittered backoff.
fn loopback_harness(server: &TestServer) -> Harness {
    let lw = ListWatch::new(ResourceClient::<ConfigMap>::namespaced(
        server.client(),
        "ns",
    ));
    harness_on(Arc::new(lw), Arc::default(), |o| o.backoff.jitter = 0.0)
}

fn harness_on(
    lw: Arc<dyn ListerWatcher<ConfigMap>>,
    script: Arc<Script>,
    configure: impl FnOnce(&mut ReflectorOptions<ConfigMap>),
) -> Harness {
    let indexer = Arc::new(Indexer::new());
    let fifo = Arc::new(DeltaFifo::new(Some(indexer.clone())));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let mut opts = ReflectorOptions {
        name: "test".into(),
        watch_error_handler: Some({
            let errors = errors.clone();
            Arc::new(move |e: &Error| errors.lock().push(e.to_string()))
        }),
        ..Default::default()
    };
    configure(&mut opts);
    let reflector = Arc::new(Reflector::new(lw, fifo.clone(), opts));
    Harness {
        script,
        fifo,
        indexer,
        reflector,
        cancel: CancellationToken::new(),
        errors,
    }
}

impl Harness {
    pub(super) fn start(&self) -> tokio::task::JoinHandle<()> {
        let r = self.reflector.clone();
        let cancel = self.cancel.clone();
        tokio::spawn(async move { r.run(cancel).await })
    }

    /// Lets the reflector run until it waits on the script or a timer (time is paused, so
    /// nothing advances the clock but `advance`).
    pub(super) async fn settle(&self) {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    }

    /// Lets the reflector run until `cond` holds (on paused time the clock stays put:
    /// this task never idles, so the runtime never advances it).
    async fn settle_until(&self, cond: impl Fn() -> bool) {
        for _ in 0..100_000 {
            if cond() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("condition not reached");
    }

    fn errors(&self) -> Vec<String> {
        self.errors.lock().clone()
    }

    /// Pops everything, applying it to the indexer as an informer would.
    pub(super) async fn drain(&self) -> Vec<(String, DeltaType)> {
        let mut seen = Vec::new();
        while !self.fifo.is_empty() {
            self.fifo
                .pop(|d| {
                    for delta in &d.deltas {
                        seen.push((d.key.clone(), delta.kind));
                        match delta.kind {
                            DeltaType::Deleted => {
                                self.indexer.delete(&d.key);
                            }
                            _ => {
                                self.indexer
                                    .add_with_key(d.key.clone(), delta.object.object().clone());
                            }
                        }
                    }
                })
                .await
                .unwrap();
        }
        seen
    }
}

#[tokio::test(start_paused = true)]
async fn first_list_is_at_version_zero_in_pages_then_watch_from_the_list_version_with_bookmarks() {
    let h = harness(|_| {});
    h.script.list("10", Some("page2"), &[("a", "5")]);
    h.script.list("10", None, &[("b", "6")]);
    let _events = h.script.watch();
    let task = h.start();
    h.settle().await;

    let calls = h.script.calls();
    assert_eq!(h.script.kinds(), ["list", "list", "watch"]);
    assert_eq!(calls[0].1.resource_version.as_deref(), Some("0"));
    assert_eq!(calls[0].1.limit, Some(500));
    assert_eq!(calls[1].1.continue_token.as_deref(), Some("page2"));
    assert_eq!(
        calls[1].1.resource_version, None,
        "a continue token carries the version"
    );
    let watch = &calls[2].1;
    assert_eq!(watch.resource_version.as_deref(), Some("10"));
    assert!(watch.allow_watch_bookmarks);
    let timeout = watch.timeout_seconds.unwrap();
    assert!((300..=600).contains(&timeout), "timeout {timeout}");

    let seen = h.drain().await;
    assert_eq!(
        seen,
        [
            ("ns/a".to_string(), DeltaType::Replaced),
            ("ns/b".to_string(), DeltaType::Replaced)
        ]
    );
    assert!(h.fifo.has_synced());
    assert_eq!(h.reflector.last_sync_resource_version(), "10");
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn watch_events_reach_the_store_and_bookmarks_advance_the_version() {
    let h = harness(|_| {});
    h.script.list("10", None, &[("a", "5")]);
    let events = h.script.watch();
    let task = h.start();
    h.settle().await;
    h.drain().await;

    events.send(Ok(WatchEvent::Added(cm("b", "11")))).unwrap();
    events
        .send(Ok(WatchEvent::Modified(cm("a", "12"))))
        .unwrap();
    events.send(Ok(WatchEvent::Deleted(cm("b", "13")))).unwrap();
    events
        .send(Ok(WatchEvent::Bookmark(Bookmark {
            resource_version: "20".into(),
            ..Default::default()
        })))
        .unwrap();
    h.settle().await;
    let seen = h.drain().await;
    assert_eq!(
        seen,
        [
            ("ns/b".to_string(), DeltaType::Added),
            ("ns/b".to_string(), DeltaType::Deleted),
            ("ns/a".to_string(), DeltaType::Updated),
        ]
    );
    assert_eq!(h.reflector.last_sync_resource_version(), "20");
    assert_eq!(h.indexer.list_keys(), ["ns/a"]);
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_closed_watch_is_reopened_at_once_from_the_last_version() {
    let h = harness(|_| {});
    h.script.list("10", None, &[]);
    let events = h.script.watch();
    let _second = h.script.watch();
    let task = h.start();
    h.settle().await;
    events.send(Ok(WatchEvent::Added(cm("a", "15")))).unwrap();
    drop(events);
    h.settle().await;
    let calls = h.script.calls();
    assert_eq!(h.script.kinds(), ["list", "watch", "watch"]);
    assert_eq!(calls[2].1.resource_version.as_deref(), Some("15"));
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn gone_relists_at_the_last_version_then_from_latest_when_that_is_too_old() {
    let h = harness(|_| {});
    h.script.list("10", None, &[("a", "5"), ("b", "6")]);
    let events = h.script.watch();
    h.script.list_error(status(410, "Expired"));
    h.script.list("30", None, &[("a", "5")]);
    let _rewatch = h.script.watch();
    let task = h.start();
    h.settle().await;
    h.drain().await;

    events
        .send(Ok(WatchEvent::Error(Box::new(Status {
            code: Some(410),
            reason: Some("Expired".into()),
            message: Some("too old resource version".into()),
            ..Default::default()
        }))))
        .unwrap();
    h.settle().await;
    // A relist waits the backoff first.
    tokio::time::advance(Duration::from_secs(2)).await;
    h.settle().await;

    let calls = h.script.calls();
    assert_eq!(h.script.kinds(), ["list", "watch", "list", "list", "watch"]);
    assert_eq!(calls[2].1.resource_version.as_deref(), Some("10"));
    assert_eq!(
        calls[3].1.resource_version, None,
        "relist from the latest state"
    );
    assert_eq!(calls[4].1.resource_version.as_deref(), Some("30"));
    let seen = h.drain().await;
    assert!(
        seen.contains(&("ns/b".to_string(), DeltaType::Deleted)),
        "{seen:?}"
    );
    assert_eq!(h.indexer.list_keys(), ["ns/a"]);
    assert!(h.errors.lock().iter().any(|e| e.contains("too old")));
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn connection_errors_rewatch_after_backoff_without_relisting() {
    let h = harness(|o| o.backoff.jitter = 0.0);
    h.script.list("10", None, &[]);
    h.script.watch_error(transport());
    h.script.watch_error(transport());
    let _ok = h.script.watch();
    let task = h.start();
    h.settle().await;
    assert_eq!(h.script.kinds(), ["list", "watch"]);
    tokio::time::advance(Duration::from_millis(799)).await;
    h.settle().await;
    assert_eq!(h.script.kinds(), ["list", "watch"], "still backing off");
    tokio::time::advance(Duration::from_millis(1)).await;
    h.settle().await;
    assert_eq!(h.script.kinds(), ["list", "watch", "watch"]);
    tokio::time::advance(Duration::from_millis(1599)).await;
    h.settle().await;
    assert_eq!(h.script.kinds().len(), 3, "the second wait is doubled");
    tokio::time::advance(Duration::from_millis(1)).await;
    h.settle().await;
    let calls = h.script.calls();
    assert_eq!(h.script.kinds(), ["list", "watch", "watch", "watch"]);
    assert!(
        calls[1..]
            .iter()
            .all(|(_, o)| o.resource_version.as_deref() == Some("10"))
    );
    assert_eq!(h.errors.lock().len(), 2);
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_silent_watch_is_taken_for_dead_and_reopened() {
    let h = harness(|o| {
        o.min_watch_timeout = Duration::from_secs(10);
        o.silence_grace = Duration::from_secs(5);
        o.backoff.jitter = 0.0;
    });
    h.script.list("10", None, &[]);
    let _silent = h.script.watch();
    let _next = h.script.watch();
    let task = h.start();
    h.settle().await;
    let timeout = u64::from(h.script.calls()[1].1.timeout_seconds.unwrap());
    tokio::time::advance(Duration::from_secs(timeout + 4)).await;
    h.settle().await;
    assert_eq!(
        h.script.kinds(),
        ["list", "watch"],
        "not before timeout + grace"
    );
    tokio::time::advance(Duration::from_secs(2)).await;
    h.settle().await;
    tokio::time::advance(Duration::from_millis(800)).await;
    h.settle().await;
    assert_eq!(h.script.kinds(), ["list", "watch", "watch"]);
    assert!(
        h.errors.lock()[0].contains("presumed dead"),
        "{:?}",
        h.errors.lock()
    );
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_malformed_event_is_reported_and_the_watch_goes_on() {
    let h = harness(|_| {});
    h.script.list("10", None, &[]);
    let events = h.script.watch();
    let task = h.start();
    h.settle().await;
    let bad = serde_json::from_str::<ConfigMap>("{\"metadata\": 5}").unwrap_err();
    events
        .send(Err(Error::decode(
            "ConfigMap from WATCH",
            bad,
            b"{\"metadata\": 5}",
        )))
        .unwrap();
    events.send(Ok(WatchEvent::Added(cm("a", "11")))).unwrap();
    h.settle().await;
    assert_eq!(h.drain().await, [("ns/a".to_string(), DeltaType::Added)]);
    assert_eq!(h.script.kinds(), ["list", "watch"], "no relist, no rewatch");
    assert!(h.errors.lock()[0].contains("ConfigMap from WATCH"));
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_relist_shares_the_cached_object_when_its_version_is_unchanged() {
    let h = harness(|_| {});
    h.script.list("10", None, &[("a", "5"), ("b", "6")]);
    let events = h.script.watch();
    h.script.list("20", None, &[("a", "5"), ("b", "7")]);
    let _rewatch = h.script.watch();
    let task = h.start();
    h.settle().await;
    h.drain().await;
    let cached_a = h.indexer.get("ns/a").unwrap();
    let cached_b = h.indexer.get("ns/b").unwrap();
    events.send(Ok(error_event(410, "Gone"))).unwrap();
    h.settle().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    h.settle().await;
    h.drain().await;
    assert!(Arc::ptr_eq(&cached_a, &h.indexer.get("ns/a").unwrap()));
    assert!(!Arc::ptr_eq(&cached_b, &h.indexer.get("ns/b").unwrap()));
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn streaming_list_hands_objects_over_as_they_stream_and_syncs_at_the_end_bookmark() {
    let h = harness(|o| o.use_streaming_list = true);
    h.indexer.add(Arc::new(cm("stale", "1"))).unwrap();
    let events = h.script.watch();
    let task = h.start();
    h.settle().await;
    let opts = &h.script.calls()[0].1;
    assert_eq!(opts.send_initial_events, Some(true));
    assert_eq!(
        opts.resource_version_match,
        Some(ResourceVersionMatch::NotOlderThan)
    );
    let streamed = super::STREAMED_PART + 1;
    for i in 0..streamed {
        let name = format!("o{i:03}");
        events.send(Ok(WatchEvent::Added(cm(&name, "5")))).unwrap();
    }
    // A key deleted again before the end is not part of the list.
    events
        .send(Ok(WatchEvent::Deleted(cm("o000", "6"))))
        .unwrap();
    h.settle().await;
    assert_eq!(
        h.fifo.len(),
        streamed,
        "the streamed objects reach the queue before the end bookmark"
    );
    assert!(
        !h.fifo.has_synced(),
        "but the queue is not synced before it"
    );
    events.send(Ok(initial_events_end("8"))).unwrap();
    events.send(Ok(WatchEvent::Added(cm("zz", "9")))).unwrap();
    h.settle().await;
    let seen = h.drain().await;
    assert!(h.fifo.has_synced());
    let kind_of = |key: &str| {
        seen.iter()
            .filter(|(k, _)| k == key)
            .map(|(_, kind)| *kind)
            .collect::<Vec<_>>()
    };
    assert_eq!(kind_of("ns/o001"), [DeltaType::Replaced]);
    assert_eq!(
        kind_of("ns/o000"),
        [DeltaType::Replaced, DeltaType::Deleted],
        "forgotten: deleted at the end"
    );
    assert_eq!(
        kind_of("ns/stale"),
        [DeltaType::Deleted],
        "not listed: deleted"
    );
    assert_eq!(
        kind_of("ns/zz"),
        [DeltaType::Added],
        "after the end: a watch event"
    );
    let mut cached = h.indexer.list_keys();
    cached.sort();
    let mut want: Vec<String> = (1..streamed).map(|i| format!("ns/o{i:03}")).collect();
    want.push("ns/zz".into());
    assert_eq!(cached, want);
    assert_eq!(h.script.kinds(), ["watch"], "the same watch goes on");
    assert_eq!(h.reflector.last_sync_resource_version(), "9");
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_closed_right_after_its_initial_events_is_rewatched_at_once() {
    let h = harness(|o| o.use_streaming_list = true);
    let events = h.script.watch();
    let _next = h.script.watch();
    let task = h.start();
    h.settle().await;
    events.send(Ok(WatchEvent::Added(cm("a", "5")))).unwrap();
    events.send(Ok(initial_events_end("8"))).unwrap();
    drop(events);
    h.settle().await;
    assert_eq!(
        h.script.kinds(),
        ["watch", "watch"],
        "not a very short watch"
    );
    assert!(h.errors().is_empty(), "{:?}", h.errors());
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_server_refusing_streaming_lists_gets_a_plain_list() {
    let h = harness(|o| o.use_streaming_list = true);
    h.script.watch_error(status(422, "Invalid"));
    h.script.list("10", None, &[("a", "1")]);
    let _w = h.script.watch();
    let task = h.start();
    h.settle().await;
    assert_eq!(h.script.kinds(), ["watch", "list", "watch"]);
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn resync_ticks_queue_sync_deltas_when_should_resync_agrees() {
    let allow = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let h = harness(|o| {
        o.resync_period = Duration::from_secs(30);
        let allow = allow.clone();
        o.should_resync = Some(Arc::new(move || {
            allow.load(std::sync::atomic::Ordering::SeqCst)
        }));
    });
    h.script.list("10", None, &[("a", "1")]);
    let _w = h.script.watch();
    let task = h.start();
    h.settle().await;
    h.drain().await;
    tokio::time::advance(Duration::from_secs(30)).await;
    h.settle().await;
    assert!(h.fifo.is_empty(), "should_resync said no");
    allow.store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::time::advance(Duration::from_secs(30)).await;
    h.settle().await;
    assert_eq!(h.drain().await, [("ns/a".to_string(), DeltaType::Sync)]);
    h.cancel.cancel();
    task.await.unwrap();
}

#[test]
fn backoff_doubles_to_the_cap_and_resets_after_a_quiet_period() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let mut b = Backoff::new(BackoffPolicy {
            jitter: 0.0,
            ..Default::default()
        });
        let got: Vec<u64> = (0..8).map(|_| b.next().as_millis() as u64).collect();
        assert_eq!(got, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
        tokio::time::advance(Duration::from_secs(119)).await;
        assert_eq!(b.next(), Duration::from_secs(30), "not quiet long enough");
        tokio::time::advance(Duration::from_secs(120)).await;
        assert_eq!(b.next(), Duration::from_millis(800));

        let mut jittered = Backoff::new(BackoffPolicy::default());
        for _ in 0..20 {
            let d = jittered.next();
            jittered = Backoff::new(BackoffPolicy::default());
            assert!(d >= Duration::from_millis(800) && d <= Duration::from_millis(1600));
        }
    });
}

#[tokio::test(start_paused = true)]
async fn a_full_backlog_holds_the_watch_back_until_the_consumer_catches_up() {
    let h = harness(|_| {});
    h.script.list("10", None, &[]);
    let events = h.script.watch();
    let task = h.start();
    for _ in 0..40 {
        h.settle().await; // hundreds of events to take
    }
    let sent = 2 * WATCH_BACKLOG_LIMIT;
    for i in 0..sent {
        let name = format!("o{i}");
        let rv = (11 + i).to_string();
        events.send(Ok(WatchEvent::Added(cm(&name, &rv)))).unwrap();
    }
    for _ in 0..40 {
        h.settle().await; // hundreds of events to take
    }
    assert_eq!(
        h.fifo.len(),
        WATCH_BACKLOG_LIMIT,
        "no event is read past the limit"
    );
    let halved = WATCH_BACKLOG_LIMIT / 2;
    for _ in 0..halved {
        h.fifo.pop(drop).await.unwrap();
    }
    for _ in 0..40 {
        h.settle().await; // hundreds of events to take
    }
    assert_eq!(
        h.fifo.len(),
        halved,
        "not resumed before below half the limit"
    );
    h.fifo.pop(drop).await.unwrap();
    for _ in 0..40 {
        h.settle().await; // hundreds of events to take
    }
    assert_eq!(
        h.fifo.len(),
        WATCH_BACKLOG_LIMIT,
        "reading resumed below half the limit, and stopped at the limit again"
    );
    let mut rest = 0;
    loop {
        let drained = h.drain().await.len();
        if drained == 0 {
            break;
        }
        rest += drained;
        h.settle().await;
    }
    assert_eq!(rest, sent - halved - 1, "nothing was lost");
    assert_eq!(h.script.kinds(), ["list", "watch"], "the watch went on");
    assert!(h.errors.lock().is_empty(), "{:?}", h.errors.lock());
    h.cancel.cancel();
    task.await.unwrap();
}

/// A lister whose first page has a next page and decodes only when the test says so.
struct GatedPages {
    continue_tokens: Mutex<Vec<Option<String>>>,
    release: Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
}

impl ListerWatcher<ConfigMap> for GatedPages {
    fn list(
        &self,
        _: ListOptions,
    ) -> BoxFuture<'_, kubekit_client::rest::Result<ObjectList<ConfigMap>>> {
        Box::pin(std::future::pending())
    }

    fn list_page(
        &self,
        opts: ListOptions,
    ) -> BoxFuture<'_, kubekit_client::rest::Result<ListPage<ConfigMap>>> {
        let first = opts.continue_token.is_none();
        self.continue_tokens.lock().push(opts.continue_token);
        let page = |name: &str, continue_: Option<&str>| ObjectList {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta {
                resource_version: Some("10".into()),
                continue_: continue_.map(Into::into),
                ..Default::default()
            },
            items: vec![cm(name, "5")],
            ..Default::default()
        };
        let listed = if first {
            let release = self.release.lock().take().expect("one first page");
            let list = page("a", Some("p2"));
            ListPage {
                metadata: list.metadata.clone(),
                shard_selector: None,
                items: Box::pin(async move {
                    release.await.expect("released");
                    Ok(list)
                }),
            }
        } else {
            ListPage::ready(page("b", None))
        };
        Box::pin(std::future::ready(Ok(listed)))
    }

    fn watch(
        &self,
        _: ListOptions,
    ) -> BoxFuture<'_, kubekit_client::rest::Result<WatchStream<ConfigMap>>> {
        Box::pin(std::future::pending())
    }

    fn describe(&self) -> String {
        "configmaps.v1 (gated)".into()
    }
}

#[tokio::test(start_paused = true)]
async fn the_next_page_is_asked_for_while_the_current_one_decodes() {
    let (release, gate) = tokio::sync::oneshot::channel();
    let lw = Arc::new(GatedPages {
        continue_tokens: Mutex::new(Vec::new()),
        release: Mutex::new(Some(gate)),
    });
    let fifo = Arc::new(DeltaFifo::new(None));
    let reflector = Arc::new(Reflector::new(
        lw.clone(),
        fifo.clone(),
        ReflectorOptions::default(),
    ));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (reflector, cancel) = (reflector.clone(), cancel.clone());
        async move { reflector.run(cancel).await }
    });
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        *lw.continue_tokens.lock(),
        [None, Some("p2".to_string())],
        "the second page was asked for before the first decoded"
    );
    assert!(
        fifo.is_empty(),
        "nothing stored before the first page decoded"
    );
    release.send(()).unwrap();
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert_eq!(fifo.list_keys(), ["ns/a", "ns/b"], "pages kept in order");
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn metrics_count_lists_relists_watches_and_events_by_type() {
    let (h, registry) = metered_harness(|_| {});
    h.script.list("10", None, &[("a", "5")]);
    let events = h.script.watch();
    h.script.list("30", None, &[("a", "5")]);
    let _rewatch = h.script.watch();
    let task = h.start();
    h.settle().await;
    events.send(Ok(WatchEvent::Added(cm("b", "11")))).unwrap();
    events
        .send(Ok(WatchEvent::Modified(cm("b", "12"))))
        .unwrap();
    events.send(Ok(error_event(410, "Expired"))).unwrap();
    h.settle().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    h.settle().await;
    assert_eq!(h.script.kinds(), ["list", "watch", "list", "watch"]);

    let text = assert_metric_lines(
        &registry,
        &[
            r#"reflector_lists_total{name="cms"} 2"#,
            r#"reflector_relists_total{name="cms"} 1"#,
            r#"reflector_watches_total{name="cms"} 2"#,
            r#"reflector_watch_events_total{name="cms",type="ADDED"} 1"#,
            r#"reflector_watch_events_total{name="cms",type="MODIFIED"} 1"#,
            r#"reflector_watch_events_total{name="cms",type="ERROR"} 1"#,
            r#"reflector_watch_events_total{name="cms",type="DELETED"} 0"#,
        ],
    );
    assert!(
        !text.contains(r#"reflector_last_resource_version_timestamp_seconds{name="cms"} 0"#),
        "the version advanced: {text}"
    );
    h.cancel.cancel();
    task.await.unwrap();
}

const EMPTY_LIST: &str =
    r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[]}"#;

fn is_list(line: &str) -> bool {
    !line.contains("watch=true")
}

#[tokio::test(start_paused = true)]
async fn a_server_refusing_every_list_with_gone_is_asked_again_only_after_the_backoff() {
    let server = TestServer::start(|_| Reply::status(410, "Gone")).await;
    let h = loopback_harness(&server);
    let task = h.start();
    h.settle_until(|| !h.errors.lock().is_empty()).await;
    let lists = server.requests();
    assert_eq!(
        lists.len(),
        2,
        "at version 0, then once from the latest state: {lists:?}"
    );
    assert!(lists[0].contains("resourceVersion=0"), "{lists:?}");
    assert!(!lists[1].contains("resourceVersion="), "{lists:?}");
    assert!(h.errors()[0].contains("410 Gone"), "{:?}", h.errors());

    tokio::time::advance(Duration::from_millis(799)).await;
    h.settle().await;
    assert_eq!(server.requests().len(), 2, "still backing off");
    tokio::time::advance(Duration::from_millis(1)).await;
    h.settle_until(|| h.errors.lock().len() == 2).await;
    assert_eq!(server.requests().len(), 3, "one list per backoff period");
    tokio::time::advance(Duration::from_millis(1599)).await;
    h.settle().await;
    assert_eq!(server.requests().len(), 3, "the second wait is doubled");
    tokio::time::advance(Duration::from_millis(1)).await;
    h.settle_until(|| h.errors.lock().len() == 3).await;
    assert_eq!(server.requests().len(), 4);
    assert!(!h.fifo.has_synced());
    h.cancel.cancel();
    task.await.unwrap();
}

/// Lets the reflector run until `cond` holds, giving the loopback server's thread real
/// time to answer (at most a second of it).
async fn served_by_loopback(h: &Harness, cond: impl Fn() -> bool) {
    for _ in 0..1000 {
        if cond() {
            return;
        }
        h.settle().await;
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("condition not reached");
}

#[tokio::test(start_paused = true)]
async fn a_resource_not_served_is_reported_once_and_listed_every_probe_period_until_it_is() {
    let served = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server = TestServer::start({
        let served = served.clone();
        move |line| match (
            served.load(std::sync::atomic::Ordering::SeqCst),
            is_list(line),
        ) {
            (false, _) => Reply::status(404, "NotFound"),
            (true, true) => Reply::json(200, EMPTY_LIST),
            (true, false) => Reply::json(200, ""),
        }
    })
    .await;
    let h = loopback_harness(&server);
    let task = h.start();
    h.settle_until(|| !h.errors.lock().is_empty()).await;
    assert!(!h.reflector.is_served());
    assert_eq!(server.requests().len(), 1);
    for probe in 2..=4 {
        tokio::time::advance(NOT_SERVED_PROBE - Duration::from_millis(1)).await;
        h.settle().await;
        assert_eq!(
            server.requests().len(),
            probe - 1,
            "waiting the probe period"
        );
        tokio::time::advance(Duration::from_millis(1)).await;
        served_by_loopback(&h, || server.requests().len() == probe).await;
    }
    h.settle().await;
    assert_eq!(h.errors().len(), 1, "reported once: {:?}", h.errors());
    assert!(!h.fifo.has_synced(), "never listed: not synced");

    served.store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::time::advance(NOT_SERVED_PROBE).await;
    served_by_loopback(&h, || h.fifo.has_synced()).await;
    assert!(h.reflector.is_served());
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn watches_closed_at_once_with_an_empty_body_are_reported_and_backed_off() {
    let server = TestServer::start(|line| match is_list(line) {
        true => Reply::json(200, EMPTY_LIST),
        false => Reply::json(200, ""),
    })
    .await;
    let metrics = crate::cache::ReflectorMetrics::new();
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    let lw = ListWatch::new(ResourceClient::<ConfigMap>::namespaced(
        server.client(),
        "ns",
    ));
    let h = harness_on(Arc::new(lw), Arc::default(), |o| {
        o.backoff.jitter = 0.0;
        o.metrics = Some(metrics.clone());
    });
    let task = h.start();
    h.settle_until(|| !h.errors.lock().is_empty()).await;
    assert_eq!(server.requests().len(), 2, "{:?}", server.requests());
    assert!(
        h.errors()[0].contains("very short watch"),
        "{:?}",
        h.errors()
    );
    tokio::time::advance(Duration::from_millis(799)).await;
    h.settle().await;
    assert_eq!(
        server.requests().len(),
        2,
        "backing off, not re-watching at once"
    );
    tokio::time::advance(Duration::from_millis(1)).await;
    h.settle_until(|| h.errors.lock().len() == 2).await;
    let requests = server.requests();
    assert_eq!(
        requests.iter().filter(|l| is_list(l)).count(),
        1,
        "no relist"
    );
    assert_eq!(requests.len(), 3);

    assert_metric_lines(
        &registry,
        &[r#"reflector_errors_total{name="test",kind="transport"} 2"#],
    );
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_list_never_answered_times_out_is_reported_and_retried_while_watches_get_no_timeout() {
    let lists = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = TestServer::start({
        let lists = lists.clone();
        move |line| match is_list(line) {
            true if lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 => Reply::Hang,
            true => Reply::json(200, EMPTY_LIST),
            false => Reply::Hang,
        }
    })
    .await;
    let h = loopback_harness(&server);
    let task = h.start();
    h.settle_until(|| server.requests().len() == 1).await;
    assert!(
        server.requests()[0].contains("timeout=60s"),
        "{:?}",
        server.requests()
    );
    tokio::time::advance(Duration::from_secs(59)).await;
    h.settle().await;
    assert!(h.errors().is_empty(), "{:?}", h.errors());
    tokio::time::advance(Duration::from_secs(1)).await;
    h.settle_until(|| !h.errors.lock().is_empty()).await;
    assert!(
        h.errors()[0].contains("timed out after 60s"),
        "{:?}",
        h.errors()
    );
    assert!(!h.fifo.has_synced());

    tokio::time::advance(Duration::from_millis(800)).await;
    h.settle_until(|| server.requests().len() == 3).await;
    h.drain().await;
    assert!(h.fifo.has_synced(), "the retried list synced");
    let watch = &server.requests()[2];
    assert!(
        watch.contains("watch=true") && watch.contains("timeoutSeconds="),
        "{watch}"
    );
    assert!(
        !watch.contains("&timeout=") && !watch.contains("?timeout="),
        "{watch}"
    );
    tokio::time::advance(Duration::from_secs(120)).await;
    h.settle().await;
    assert_eq!(
        h.errors().len(),
        1,
        "the open watch is not timed out: {:?}",
        h.errors()
    );
    assert_eq!(server.requests().len(), 3);
    h.cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_transform_panicking_on_one_object_reports_it_skips_it_and_the_reflector_goes_on() {
    let h = harness(|o| {
        o.transform = Some(Arc::new(|c: ConfigMap| {
            assert_ne!(
                c.metadata.name.as_deref(),
                Some("bad"),
                "transform refuses bad"
            );
            c
        }));
    });
    h.script
        .list("10", None, &[("a", "5"), ("bad", "6"), ("c", "7")]);
    let events = h.script.watch();
    let task = h.start();
    h.settle().await;
    h.drain().await;
    let mut keys = h.indexer.list_keys();
    keys.sort();
    assert_eq!(keys, ["ns/a", "ns/c"]);
    assert!(h.fifo.has_synced());
    let errors = h.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains(r#"the transform of test on "ns/bad""#)
            && errors[0].contains("panicked: assertion")
            && errors[0].contains("transform refuses bad"),
        "{errors:?}"
    );

    events
        .send(Ok(WatchEvent::Modified(cm("bad", "11"))))
        .unwrap();
    events.send(Ok(WatchEvent::Added(cm("d", "12")))).unwrap();
    h.settle().await;
    h.drain().await;
    let mut keys = h.indexer.list_keys();
    keys.sort();
    assert_eq!(keys, ["ns/a", "ns/c", "ns/d"], "still watching");
    assert_eq!(h.errors().len(), 2);
    assert_eq!(h.reflector.last_sync_resource_version(), "12");
    h.cancel.cancel();
    task.await.unwrap();
}
