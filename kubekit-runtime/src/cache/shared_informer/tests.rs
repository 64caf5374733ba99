//! The informer against a scripted lister-watcher.

use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::cache::ResourceEventHandlerFuncs;
use crate::cache::test_support::{Events, Script, cm};
use kubekit_client::rest::WatchEvent;

/// What a handler saw, as strings: `add ns/a initial`, `update ns/a 1->2`, `delete ns/a`.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn handler(&self) -> ResourceEventHandlerFuncs<ConfigMap> {
        let (a, u, d) = (self.0.clone(), self.0.clone(), self.0.clone());
        ResourceEventHandlerFuncs::new()
            .on_add(move |o: &Arc<ConfigMap>, initial| {
                a.lock().push(format!(
                    "add {}{}",
                    name(o),
                    if initial { " initial" } else { "" }
                ))
            })
            .on_update(move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
                u.lock()
                    .push(format!("update {} {}->{}", name(new), rv(old), rv(new)))
            })
            .on_delete(move |o: &MaybeTombstone<ConfigMap>| {
                let kind = match o {
                    MaybeTombstone::Object(_) => "",
                    MaybeTombstone::Tombstone(_) => " tombstone",
                };
                d.lock().push(format!("delete {}{kind}", name(o.object())))
            })
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock())
    }

    /// Waits until `n` notifications were handled, then takes them (and any more).
    async fn take_after(&self, n: usize) -> Vec<String> {
        until(|| self.0.lock().len() >= n).await;
        settle().await;
        self.take()
    }
}

fn name(o: &ConfigMap) -> String {
    o.metadata.name.clone().unwrap_or_default()
}

fn rv(o: &ConfigMap) -> String {
    o.metadata.resource_version.clone().unwrap_or_default()
}

struct Running {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

fn informer(script: &Arc<Script>, resync: Duration) -> Arc<SharedIndexInformer<ConfigMap>> {
    Arc::new(SharedIndexInformer::new(
        Arc::new(crate::cache::test_support::Fake(script.clone())),
        resync,
    ))
}

fn start(informer: &Arc<SharedIndexInformer<ConfigMap>>) -> Running {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let informer = informer.clone();
        let cancel = cancel.clone();
        async move { informer.run(cancel).await }
    });
    Running { cancel, task }
}

impl Running {
    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap();
    }
}

/// Settles until `cond` holds (at most ~10 s of real time); panics otherwise.
async fn until(cond: impl Fn() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        settle().await;
    }
    panic!("condition not reached");
}

/// Lets the informer's tasks run and its handler threads catch up (handlers run on threads
/// of their own, in real time, while the runtime's clock is paused).
async fn settle() {
    for _ in 0..20 {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn synced_list(script: &Script, items: &[(&str, &str)]) -> Events {
    script.list("10", None, items);
    script.watch()
}

#[tokio::test(start_paused = true)]
async fn handlers_get_initial_adds_then_updates_and_deletes_in_order() {
    let script = Arc::new(Script::default());
    let events = synced_list(&script, &[("a", "1"), ("b", "2")]);
    let inf = informer(&script, Duration::ZERO);
    let log = Log::default();
    let reg = inf.add_event_handler(log.handler());
    let run = start(&inf);
    assert!(inf.wait_for_sync(&run.cancel).await);
    settle().await;
    assert!(reg.has_synced());
    assert_eq!(log.take_after(2).await, ["add a initial", "add b initial"]);

    events.send(Ok(WatchEvent::Modified(cm("a", "3")))).unwrap();
    events.send(Ok(WatchEvent::Added(cm("c", "4")))).unwrap();
    events.send(Ok(WatchEvent::Deleted(cm("b", "5")))).unwrap();
    settle().await;
    assert_eq!(
        log.take_after(3).await,
        ["update a 1->3", "add c", "delete b"]
    );
    assert_eq!(inf.indexer().list_keys().len(), 2);
    assert_eq!(inf.last_sync_resource_version(), "5");
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_late_handler_gets_every_cached_object_once_and_syncs_after_handling_them() {
    let script = Arc::new(Script::default());
    let events = synced_list(&script, &[("a", "1"), ("b", "2"), ("c", "3")]);
    let inf = informer(&script, Duration::ZERO);
    let run = start(&inf);
    assert!(inf.wait_for_sync(&run.cancel).await);

    let log = Log::default();
    let reg = inf.add_event_handler(log.handler());
    // Not `wait_initial_handled`: awaiting a handler thread would let the paused clock jump.
    until(|| reg.has_synced()).await;
    let mut seen = log.take_after(3).await;
    seen.sort();
    assert_eq!(seen, ["add a initial", "add b initial", "add c initial"]);

    events.send(Ok(WatchEvent::Added(cm("d", "4")))).unwrap();
    settle().await;
    assert_eq!(
        log.take_after(1).await,
        ["add d"],
        "no replayed object comes twice"
    );
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resyncs_go_only_to_handlers_whose_period_is_due() {
    let script = Arc::new(Script::default());
    let _events = synced_list(&script, &[("a", "1")]);
    let inf = informer(&script, Duration::ZERO);
    let fast = Log::default();
    let slow = Log::default();
    let none = Log::default();
    let r1 = inf.add_event_handler_with_resync_period(fast.handler(), Duration::from_secs(2));
    let r2 = inf.add_event_handler_with_resync_period(slow.handler(), Duration::from_secs(6));
    let r3 = inf.add_event_handler_with_resync_period(none.handler(), Duration::ZERO);
    assert_eq!(r1.resync_period(), Duration::from_secs(2));
    assert_eq!(r2.resync_period(), Duration::from_secs(6));
    assert_eq!(r3.resync_period(), Duration::ZERO);
    let run = start(&inf);
    assert!(inf.wait_for_sync(&run.cancel).await);
    settle().await;
    for log in [&fast, &slow, &none] {
        log.take_after(1).await;
    }
    for _ in 0..6 {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
    }
    assert_eq!(fast.take_after(3).await, ["update a 1->1"; 3]);
    assert_eq!(slow.take_after(1).await, ["update a 1->1"]);
    assert!(none.take().is_empty());
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resync_periods_are_at_least_one_second_and_raised_to_the_running_check_period() {
    let script = Arc::new(Script::default());
    let _events = synced_list(&script, &[]);
    let inf = informer(&script, Duration::from_secs(10));
    let early = inf
        .add_event_handler_with_resync_period(Log::default().handler(), Duration::from_millis(10));
    assert_eq!(early.resync_period(), MINIMUM_RESYNC_PERIOD);
    let default = inf.add_event_handler(Log::default().handler());
    assert_eq!(
        default.resync_period(),
        Duration::from_secs(10),
        "a shorter handler period lowers the check period, not the default handlers get"
    );

    let script = Arc::new(Script::default());
    let _events = synced_list(&script, &[]);
    let inf = informer(&script, Duration::from_secs(10));
    let run = start(&inf);
    settle().await;
    let late =
        inf.add_event_handler_with_resync_period(Log::default().handler(), Duration::from_secs(3));
    assert_eq!(
        late.resync_period(),
        Duration::from_secs(10),
        "after start, it is raised to the running check period"
    );
    run.stop().await;

    let script = Arc::new(Script::default());
    let _events = synced_list(&script, &[]);
    let inf = informer(&script, Duration::ZERO);
    let run = start(&inf);
    settle().await;
    let late =
        inf.add_event_handler_with_resync_period(Log::default().handler(), Duration::from_secs(3));
    assert_eq!(
        late.resync_period(),
        Duration::ZERO,
        "a running informer that does not resync gives none"
    );
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn add_event_handler_gives_the_default_period_whatever_shorter_periods_others_asked_for() {
    let script = Arc::new(Script::default());
    let _events = synced_list(&script, &[("a", "1")]);
    let inf = informer(&script, Duration::from_secs(10));
    let before = Log::default();
    let fast = Log::default();
    let after = Log::default();
    let r_before = inf.add_event_handler(before.handler());
    let r_fast = inf.add_event_handler_with_resync_period(fast.handler(), Duration::from_secs(2));
    let r_after = inf.add_event_handler(after.handler());
    assert_eq!(r_before.resync_period(), Duration::from_secs(10));
    assert_eq!(r_fast.resync_period(), Duration::from_secs(2));
    assert_eq!(
        r_after.resync_period(),
        Duration::from_secs(10),
        "the default, not the lowered check period"
    );
    // An informer made without a period: a default handler never resyncs, even beside a
    // handler that does.
    let script_none = Arc::new(Script::default());
    let _events_none = synced_list(&script_none, &[("a", "1")]);
    let inf_none = informer(&script_none, Duration::ZERO);
    let resyncing = Log::default();
    let plain = Log::default();
    inf_none.add_event_handler_with_resync_period(resyncing.handler(), Duration::from_secs(2));
    let r_plain = inf_none.add_event_handler(plain.handler());
    assert_eq!(r_plain.resync_period(), Duration::ZERO);

    let (run, run_none) = (start(&inf), start(&inf_none));
    assert!(inf.wait_for_sync(&run.cancel).await);
    assert!(inf_none.wait_for_sync(&run_none.cancel).await);
    settle().await;
    for log in [&before, &fast, &after, &resyncing, &plain] {
        log.take_after(1).await;
    }
    for _ in 0..10 {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
    }
    assert_eq!(fast.take_after(5).await, ["update a 1->1"; 5]);
    assert_eq!(resyncing.take_after(5).await, ["update a 1->1"; 5]);
    assert_eq!(
        before.take(),
        ["update a 1->1"],
        "one resync in 10 s, not one every 2 s"
    );
    assert_eq!(after.take(), ["update a 1->1"]);
    assert!(plain.take().is_empty(), "no resync at all");
    run.stop().await;
    run_none.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_relisted_object_with_a_new_version_is_an_update_for_every_handler() {
    let script = Arc::new(Script::default());
    let events = synced_list(&script, &[("a", "1"), ("b", "2")]);
    script.list("20", None, &[("a", "1"), ("b", "7")]);
    let _rewatch = script.watch();
    let inf = informer(&script, Duration::ZERO);
    let log = Log::default();
    inf.add_event_handler_with_resync_period(log.handler(), Duration::ZERO);
    let run = start(&inf);
    assert!(inf.wait_for_sync(&run.cancel).await);
    settle().await;
    log.take_after(2).await;
    events
        .send(Ok(WatchEvent::Error(Box::new(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Status {
                code: Some(410),
                reason: Some("Gone".into()),
                ..Default::default()
            },
        ))))
        .unwrap();
    settle().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    settle().await;
    assert_eq!(
        log.take_after(1).await,
        ["update b 2->7"],
        "the unchanged object is a resync, not sent"
    );
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_is_reported_and_neither_it_nor_others_stop() {
    let script = Arc::new(Script::default());
    let events = synced_list(&script, &[]);
    let inf = informer(&script, Duration::ZERO);
    let log = Log::default();
    let bad = inf.add_event_handler(ResourceEventHandlerFuncs::new().on_add(
        |o: &Arc<ConfigMap>, _| {
            if name(o) == "boom" {
                panic!("handler bug");
            }
        },
    ));
    inf.add_event_handler(log.handler());
    let run = start(&inf);
    assert!(inf.wait_for_sync(&run.cancel).await);
    events.send(Ok(WatchEvent::Added(cm("boom", "2")))).unwrap();
    events.send(Ok(WatchEvent::Added(cm("fine", "3")))).unwrap();
    settle().await;
    until(|| bad.panics() == 1 && bad.depth() == 0).await;
    assert_eq!(bad.panics(), 1);
    assert_eq!(
        bad.depth(),
        0,
        "the panicking handler went on to the next event"
    );
    assert_eq!(log.take_after(2).await, ["add boom", "add fine"]);
    assert_eq!(inf.indexer().len(), 2);
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_removed_handler_receives_nothing_more() {
    let script = Arc::new(Script::default());
    let events = synced_list(&script, &[]);
    let inf = informer(&script, Duration::ZERO);
    let log = Log::default();
    let reg = inf.add_event_handler(log.handler());
    let run = start(&inf);
    assert!(inf.wait_for_sync(&run.cancel).await);
    events.send(Ok(WatchEvent::Added(cm("a", "2")))).unwrap();
    settle().await;
    inf.remove_event_handler(&reg);
    events.send(Ok(WatchEvent::Added(cm("b", "3")))).unwrap();
    settle().await;
    assert_eq!(log.take_after(1).await, ["add a"]);
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_transform_runs_before_objects_are_stored_or_handled() {
    let script = Arc::new(Script::default());
    let events = synced_list(&script, &[("a", "1")]);
    let inf = informer(&script, Duration::ZERO);
    inf.set_transform(|mut c: ConfigMap| {
        c.metadata.managed_fields = None;
        c.metadata.annotations = Some([("seen".to_string(), "yes".to_string())].into());
        c
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    inf.add_event_handler(ResourceEventHandlerFuncs::new().on_add({
        let seen = seen.clone();
        move |o: &Arc<ConfigMap>, _| seen.lock().push(o.metadata.annotations.clone())
    }));
    let run = start(&inf);
    assert!(inf.wait_for_sync(&run.cancel).await);
    let mut with_fields = cm("b", "2");
    with_fields.metadata.managed_fields = Some(vec![Default::default()]);
    events.send(Ok(WatchEvent::Added(with_fields))).unwrap();
    settle().await;
    let b = inf.indexer().get("ns/b").unwrap();
    assert!(b.metadata.managed_fields.is_none());
    assert_eq!(seen.lock().len(), 2);
    assert!(
        seen.lock()
            .iter()
            .all(|a| a.as_ref().is_some_and(|a| a["seen"] == "yes"))
    );
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_handler_buffers_without_holding_up_the_informer_or_other_handlers() {
    let script = Arc::new(Script::default());
    let events = synced_list(&script, &[]);
    let inf = informer(&script, Duration::ZERO);
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = std::sync::Mutex::new(gate);
    let blocked = inf.add_event_handler(ResourceEventHandlerFuncs::new().on_add(
        move |_: &Arc<ConfigMap>, _| {
            // Blocks on the first event until released.
            let _ = gate.lock().unwrap().recv();
        },
    ));
    let log = Log::default();
    inf.add_event_handler(log.handler());
    let run = start(&inf);
    assert!(inf.wait_for_sync(&run.cancel).await);
    for i in 0..100 {
        events
            .send(Ok(WatchEvent::Added(cm(
                &format!("o{i}"),
                &format!("{}", i + 2),
            ))))
            .unwrap();
    }
    crate::cache::test_support::eventually(|| log.0.lock().len() == 100).await;
    assert_eq!(inf.indexer().len(), 100);
    assert!(blocked.depth() >= 99, "depth {}", blocked.depth());
    assert_eq!(blocked.max_depth(), 100);
    for _ in 0..100 {
        let _ = release.send(());
    }
    crate::cache::test_support::eventually(|| blocked.depth() == 0).await;
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_non_blocking_handler_is_called_on_the_informers_task_in_order_replay_included() {
    let script = Arc::new(Script::default());
    let events = synced_list(&script, &[("a", "1"), ("b", "2")]);
    let inf = informer(&script, Duration::ZERO);
    let threads = Arc::new(Mutex::new(Vec::new()));
    let record_thread = |threads: &Arc<Mutex<Vec<Option<String>>>>| {
        let threads = threads.clone();
        move |_: &Arc<ConfigMap>, _: bool| {
            let name = std::thread::current().name().map(str::to_string);
            threads.lock().push(name);
        }
    };
    let log = Log::default();
    let early = inf.add_event_handler(log.handler().non_blocking());
    inf.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .on_add(record_thread(&threads))
            .non_blocking(),
    );
    let run = start(&inf);
    assert!(inf.wait_for_sync(&run.cancel).await);
    // Handled by the time the informer has synced: nothing is buffered.
    assert!(early.has_synced());
    assert_eq!(log.take(), ["add a initial", "add b initial"]);

    events.send(Ok(WatchEvent::Modified(cm("a", "3")))).unwrap();
    events.send(Ok(WatchEvent::Deleted(cm("b", "4")))).unwrap();
    until(|| log.0.lock().len() == 2).await;
    assert_eq!(log.take(), ["update a 1->3", "delete b"]);

    // Registered late, it gets the replay at once, from the registering call.
    let late = Log::default();
    let reg = inf.add_event_handler(late.handler().non_blocking());
    assert_eq!(late.take(), ["add a initial"]);
    assert!(reg.has_synced());
    assert_eq!(reg.depth(), 0);

    let threads = threads.lock().clone();
    assert_eq!(threads.len(), 2);
    assert!(
        threads.iter().all(|t| !t
            .as_deref()
            .unwrap_or_default()
            .starts_with("kubekit-handler")),
        "no handler thread: {threads:?}"
    );
    run.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_panicking_non_blocking_handler_is_counted_and_the_informer_goes_on() {
    let script = Arc::new(Script::default());
    let events = synced_list(&script, &[]);
    let inf = informer(&script, Duration::ZERO);
    let panicking = inf.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .on_add(|o: &Arc<ConfigMap>, _| assert_ne!(name(o), "bad", "a handler's bug"))
            .non_blocking(),
    );
    let log = Log::default();
    inf.add_event_handler(log.handler().non_blocking());
    let run = start(&inf);
    assert!(inf.wait_for_sync(&run.cancel).await);
    events.send(Ok(WatchEvent::Added(cm("bad", "2")))).unwrap();
    events.send(Ok(WatchEvent::Added(cm("good", "3")))).unwrap();
    until(|| log.0.lock().len() == 2).await;
    assert_eq!(log.take(), ["add bad", "add good"]);
    assert_eq!(panicking.panics(), 1);
    assert_eq!(inf.indexer().len(), 2);
    run.stop().await;
}
