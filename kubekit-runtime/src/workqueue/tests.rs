//! Cross-cutting tests of the work queues: a model-based property test of the queue rules,
//! property tests with concurrent tasks, and metric values after scripted sequences.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use proptest::prelude::*;
use tokio::time::Instant;

use super::*;

fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

// ---------------------------------------------------------------------------------------
// Model-based: the queue behaves exactly like a plain model of client-go's rules.
// ---------------------------------------------------------------------------------------

/// client-go's queue rules, written as plainly as possible.
#[derive(Default)]
struct Model {
    queue: VecDeque<u8>,
    dirty: HashSet<u8>,
    processing: HashSet<u8>,
    shutting_down: bool,
}

impl Model {
    fn add(&mut self, item: u8) {
        if self.shutting_down || !self.dirty.insert(item) {
            return;
        }
        if !self.processing.contains(&item) {
            self.queue.push_back(item);
        }
    }

    /// `None`: `get` would wait. `Some(None)`: shut down and empty.
    fn get(&mut self) -> Option<Option<u8>> {
        match self.queue.pop_front() {
            Some(item) => {
                self.dirty.remove(&item);
                self.processing.insert(item);
                Some(Some(item))
            }
            None if self.shutting_down => Some(None),
            None => None,
        }
    }

    fn done(&mut self, item: u8) {
        if self.processing.remove(&item) && self.dirty.contains(&item) {
            self.queue.push_back(item);
        }
    }
}

#[derive(Clone, Debug)]
enum ModelOp {
    Add(u8),
    Get,
    /// Done for the n-th item being processed (modulo their number), or for an arbitrary
    /// item when none is.
    Done(usize, u8),
    ShutDown,
}

fn model_op() -> impl Strategy<Value = ModelOp> {
    prop_oneof![
        6 => (0..8_u8).prop_map(ModelOp::Add),
        4 => Just(ModelOp::Get),
        3 => (any::<usize>(), 0..8_u8).prop_map(|(n, item)| ModelOp::Done(n, item)),
        1 => Just(ModelOp::ShutDown),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// De-duplication, exclusion, re-queue at done, FIFO hand-out and shutdown all match
    /// the model after every operation.
    #[test]
    fn queue_follows_client_go_rules_in_fifo_order(ops in prop::collection::vec(model_op(), 1..80)) {
        let queue = Queue::new();
        let mut model = Model::default();
        for op in ops {
            match op {
                ModelOp::Add(item) => {
                    queue.add(item);
                    model.add(item);
                }
                ModelOp::Get => {
                    let mut get = pin!(queue.get());
                    let got = match poll_once(get.as_mut()) {
                        Poll::Ready(item) => Some(item),
                        Poll::Pending => None,
                    };
                    prop_assert_eq!(got, model.get());
                }
                ModelOp::Done(n, item) => {
                    let mut processing: Vec<u8> = model.processing.iter().copied().collect();
                    processing.sort_unstable();
                    let item = if processing.is_empty() { item } else { processing[n % processing.len()] };
                    queue.done(&item);
                    model.done(item);
                }
                ModelOp::ShutDown => {
                    queue.shut_down();
                    model.shutting_down = true;
                }
            }
            prop_assert_eq!(queue.len(), model.queue.len());
            prop_assert_eq!(queue.shutting_down(), model.shutting_down);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Concurrent tasks: nothing lost, nothing processed twice at once.
// ---------------------------------------------------------------------------------------

/// One step of a producer task.
#[derive(Clone, Debug)]
enum ProducerOp {
    Add(u8),
    /// Add after this many milliseconds (0 adds at once).
    AddAfter(u8, u8),
    Sleep(u8),
    Yield,
}

fn producer_op() -> impl Strategy<Value = ProducerOp> {
    prop_oneof![
        4 => (0..12_u8).prop_map(ProducerOp::Add),
        3 => (0..12_u8, 0..20_u8).prop_map(|(item, ms)| ProducerOp::AddAfter(item, ms)),
        1 => (1..10_u8).prop_map(ProducerOp::Sleep),
        2 => Just(ProducerOp::Yield),
    ]
}

/// What a worker does with one item: work for `sleep_ms` (0: just yield), and add the item
/// again while processing it if `re_add`. A re-adding step always takes time: with paused
/// time, a worker re-adding its item in zero time would never let the clock (and so the
/// shutdown) come.
#[derive(Clone, Debug)]
struct WorkStep {
    sleep_ms: u8,
    re_add: bool,
}

fn work_step() -> impl Strategy<Value = WorkStep> {
    (0..6_u8, prop::bool::weighted(0.3)).prop_map(|(sleep_ms, re_add)| WorkStep {
        sleep_ms: if re_add { sleep_ms.max(1) } else { sleep_ms },
        re_add,
    })
}

/// An add the queue accepted: it must be followed by a hand-out of the item that starts
/// after the call (`seq`) and not before the item was due (`due`).
struct AcceptedAdd {
    item: u8,
    seq: u64,
    called: Instant,
    due: Instant,
}

/// A hand-out by `get`.
struct HandOut {
    item: u8,
    seq: u64,
    at: Instant,
}

#[derive(Default)]
struct Log {
    adds: Vec<AcceptedAdd>,
    /// `add_after` calls made before shutdown with a delay: accepted only if due by then.
    delayed: Vec<AcceptedAdd>,
    hand_outs: Vec<HandOut>,
    in_flight: HashSet<u8>,
    violations: Vec<String>,
    shut_down_at: Option<Instant>,
}

struct Shared {
    queue: DelayingQueue<u8>,
    log: Mutex<Log>,
    seq: AtomicU64,
}

impl Shared {
    fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::SeqCst)
    }

    /// Adds `item` now, recording the add if the queue accepts it. Single-threaded
    /// runtime: nothing can shut the queue down between the check and the add.
    fn add(&self, item: u8) {
        let accepted = !self.queue.shutting_down();
        let seq = self.next_seq();
        self.queue.add(item);
        if accepted {
            let now = Instant::now();
            self.log.lock().adds.push(AcceptedAdd {
                item,
                seq,
                called: now,
                due: now,
            });
        }
    }

    fn add_after(&self, item: u8, delay: Duration) {
        let open = !self.queue.shutting_down();
        let seq = self.next_seq();
        self.queue.add_after(item, delay);
        if open {
            let now = Instant::now();
            let record = AcceptedAdd {
                item,
                seq,
                called: now,
                due: now + delay,
            };
            let mut log = self.log.lock();
            if delay.is_zero() {
                log.adds.push(record);
            } else {
                log.delayed.push(record);
            }
        }
    }
}

async fn producer(shared: Arc<Shared>, ops: Vec<ProducerOp>) {
    for op in ops {
        match op {
            ProducerOp::Add(item) => shared.add(item),
            ProducerOp::AddAfter(item, ms) => {
                shared.add_after(item, Duration::from_millis(u64::from(ms)));
            }
            ProducerOp::Sleep(ms) => {
                tokio::time::sleep(Duration::from_millis(u64::from(ms))).await;
            }
            ProducerOp::Yield => tokio::task::yield_now().await,
        }
    }
}

async fn worker(shared: Arc<Shared>, steps: Vec<WorkStep>) {
    let mut steps = steps.into_iter().cycle();
    while let Some(item) = shared.queue.get().await {
        let seq = shared.next_seq();
        {
            let mut log = shared.log.lock();
            if !log.in_flight.insert(item) {
                log.violations
                    .push(format!("item {item} handed to two workers at once"));
            }
            log.hand_outs.push(HandOut {
                item,
                seq,
                at: Instant::now(),
            });
        }
        let step = steps.next().unwrap_or(WorkStep {
            sleep_ms: 0,
            re_add: false,
        });
        if step.sleep_ms == 0 {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(Duration::from_millis(u64::from(step.sleep_ms))).await;
        }
        if step.re_add {
            shared.add(item);
        }
        shared.log.lock().in_flight.remove(&item);
        shared.queue.done(&item);
    }
}

/// Checks the log of a finished run; returns the violations found.
fn check(log: &Log) -> Vec<String> {
    let mut violations = log.violations.clone();
    let Some(shut_down_at) = log.shut_down_at else {
        violations.push("never shut down".into());
        return violations;
    };
    // A plain add must be followed by a hand-out.
    let mut expected: Vec<(u8, u64, Instant)> = log
        .adds
        .iter()
        .map(|add| (add.item, add.seq, add.due))
        .collect();
    // So must an add_after that was due by shutdown, though not before its deadline, which
    // another add_after of the same item may have moved earlier: the deadline is at least
    // the smallest one among the item's add_after calls that could have merged with it.
    for add in log.delayed.iter().filter(|add| add.due <= shut_down_at) {
        let earliest = log
            .delayed
            .iter()
            .filter(|other| {
                other.item == add.item && other.due >= add.called && other.called <= add.due
            })
            .map(|other| other.due)
            .fold(add.due, Instant::min);
        expected.push((add.item, add.seq, earliest));
    }
    for (item, seq, not_before) in expected {
        let handed_out = log
            .hand_outs
            .iter()
            .any(|out| out.item == item && out.seq > seq && out.at >= not_before);
        if !handed_out {
            violations.push(format!(
                "item {item} added (seq {seq}) was never handed out afterwards"
            ));
        }
    }
    if !log.in_flight.is_empty() {
        violations.push(format!("still in flight: {:?}", log.in_flight));
    }
    violations
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Producers add and add_after at random, workers process (sometimes re-adding the item
    /// they hold), and the queue is shut down at a random moment: every add the queue
    /// accepted is followed by a hand-out of its item, no item is held by two workers at
    /// once, every task ends, and the timer task is gone.
    #[test]
    fn concurrent_tasks_lose_nothing_and_never_share_an_item(
        producers in prop::collection::vec(prop::collection::vec(producer_op(), 0..40), 1..4),
        workers in prop::collection::vec(prop::collection::vec(work_step(), 1..8), 1..5),
        shut_down_after_ms in 0..60_u64,
        drain in any::<bool>(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let violations = runtime.block_on(async move {
            let shared = Arc::new(Shared {
                queue: DelayingQueue::new(),
                log: Mutex::new(Log::default()),
                seq: AtomicU64::new(0),
            });
            let mut tasks = Vec::new();
            for ops in producers {
                tasks.push(tokio::spawn(producer(Arc::clone(&shared), ops)));
            }
            for steps in workers {
                tasks.push(tokio::spawn(worker(Arc::clone(&shared), steps)));
            }
            let stopper = Arc::clone(&shared);
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(shut_down_after_ms)).await;
                stopper.log.lock().shut_down_at = Some(Instant::now());
                if drain {
                    stopper.queue.shut_down_with_drain().await;
                } else {
                    stopper.queue.shut_down();
                }
            }));
            let all = async {
                for task in tasks {
                    task.await.unwrap();
                }
            };
            if tokio::time::timeout(Duration::from_secs(3600), all).await.is_err() {
                return vec!["a task never ended".to_string()];
            }
            check(&shared.log.lock())
        });
        prop_assert!(violations.is_empty(), "{:?}", violations);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The same on a multi-threaded runtime, where tasks really run in parallel: producers
    /// add while workers get and done; then the queue is drained and shut down.
    #[test]
    fn parallel_workers_lose_nothing_and_never_share_an_item(
        producers in prop::collection::vec(prop::collection::vec((0..16_u16, any::<bool>()), 1..400), 1..4),
        workers in 1..6_usize,
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        let result = runtime.block_on(async move {
            let queue: Queue<u16> = Queue::new();
            let seq = Arc::new(AtomicU64::new(0));
            let in_flight = Arc::new(Mutex::new(HashSet::new()));
            let producer_tasks: Vec<_> = producers
                .into_iter()
                .map(|ops| {
                    let (queue, seq) = (queue.clone(), Arc::clone(&seq));
                    tokio::spawn(async move {
                        let mut adds = Vec::new();
                        for (item, yield_after) in ops {
                            adds.push((item, seq.fetch_add(1, Ordering::SeqCst)));
                            queue.add(item);
                            if yield_after {
                                tokio::task::yield_now().await;
                            }
                        }
                        adds
                    })
                })
                .collect();
            let worker_tasks: Vec<_> = (0..workers)
                .map(|_| {
                    let (queue, seq, in_flight) = (queue.clone(), Arc::clone(&seq), Arc::clone(&in_flight));
                    tokio::spawn(async move {
                        let mut hand_outs = Vec::new();
                        let mut doubles = 0;
                        while let Some(item) = queue.get().await {
                            hand_outs.push((item, seq.fetch_add(1, Ordering::SeqCst)));
                            if !in_flight.lock().insert(item) {
                                doubles += 1;
                            }
                            tokio::task::yield_now().await;
                            in_flight.lock().remove(&item);
                            queue.done(&item);
                        }
                        (hand_outs, doubles)
                    })
                })
                .collect();
            let mut adds = Vec::new();
            for task in producer_tasks {
                adds.extend(task.await.unwrap());
            }
            queue.shut_down_with_drain().await;
            let mut last_hand_out: HashMap<u16, u64> = HashMap::new();
            let mut doubles = 0;
            let joined = tokio::time::timeout(Duration::from_secs(60), async {
                for task in worker_tasks {
                    let (hand_outs, d) = task.await.unwrap();
                    doubles += d;
                    for (item, seq) in hand_outs {
                        let last = last_hand_out.entry(item).or_default();
                        *last = (*last).max(seq);
                    }
                }
            })
            .await;
            if joined.is_err() {
                return Err("a worker never ended".to_string());
            }
            if doubles > 0 {
                return Err(format!("{doubles} items handed to two workers at once"));
            }
            for (item, seq) in adds {
                if last_hand_out.get(&item).is_none_or(|&last| last < seq) {
                    return Err(format!("item {item} added at {seq} was never handed out afterwards"));
                }
            }
            if !queue.is_empty() {
                return Err("items left in the queue".into());
            }
            Ok(())
        });
        prop_assert_eq!(result, Ok(()));
    }
}

// ---------------------------------------------------------------------------------------
// Metrics after scripted sequences.
// ---------------------------------------------------------------------------------------

fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text
}

/// The value of one series (`name{labels}`) in the text encoding.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        line.strip_prefix(series)
            .and_then(|rest| rest.strip_prefix(' '))
            .map(|value| value.parse().unwrap())
    })
}

fn metric(text: &str, series: &str) -> f64 {
    value(text, series).unwrap_or_else(|| panic!("no series {series} in\n{text}"))
}

/// Lets the background tasks run at the current (paused) instant.
async fn settle() {
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
}

const DEPTH: &str = r#"workqueue_depth{name="test"}"#;
const ADDS: &str = r#"workqueue_adds_total{name="test"}"#;
const QUEUE_COUNT: &str = r#"workqueue_queue_duration_seconds_count{name="test"}"#;
const QUEUE_SUM: &str = r#"workqueue_queue_duration_seconds_sum{name="test"}"#;
const WORK_COUNT: &str = r#"workqueue_work_duration_seconds_count{name="test"}"#;
const WORK_SUM: &str = r#"workqueue_work_duration_seconds_sum{name="test"}"#;
const UNFINISHED: &str = r#"workqueue_unfinished_work_seconds{name="test"}"#;
const LONGEST: &str = r#"workqueue_longest_running_processor_seconds{name="test"}"#;
const RETRIES: &str = r#"workqueue_retries_total{name="test"}"#;

fn registered() -> (Registry, WorkqueueMetrics) {
    let mut registry = Registry::default();
    let metrics = WorkqueueMetrics::new();
    metrics.register(&mut registry);
    (registry, metrics)
}

#[tokio::test(start_paused = true)]
async fn depth_and_adds_count_new_dirty_items_only() {
    let (registry, metrics) = registered();
    let queue = Queue::with_config(QueueConfig::new().name("test").metrics(&metrics));
    queue.add("a");
    queue.add("b");
    queue.add("a"); // already dirty: no change
    let text = encode(&registry);
    assert_eq!(metric(&text, DEPTH), 2.0);
    assert_eq!(metric(&text, ADDS), 2.0);

    let a = queue.get().await.unwrap();
    assert_eq!(metric(&encode(&registry), DEPTH), 1.0);
    queue.add("a"); // processing, becomes dirty: counted at once (as client-go does)
    queue.add("a"); // dirty already: not counted
    let text = encode(&registry);
    assert_eq!(metric(&text, DEPTH), 2.0);
    assert_eq!(metric(&text, ADDS), 3.0);
    queue.done(&a); // re-queued: no new add
    let text = encode(&registry);
    assert_eq!(metric(&text, DEPTH), 2.0);
    assert_eq!(metric(&text, ADDS), 3.0);
    queue.shut_down();
    queue.add("c"); // ignored after shutdown
    assert_eq!(metric(&encode(&registry), ADDS), 3.0);
}

#[tokio::test(start_paused = true)]
async fn queue_and_work_durations_are_observed_at_get_and_done() {
    let (registry, metrics) = registered();
    let queue = Queue::with_config(QueueConfig::new().name("test").metrics(&metrics));
    queue.add("a"); // t = 0
    tokio::time::advance(Duration::from_secs(1)).await;
    let a = queue.get().await.unwrap(); // waited 1 s
    let text = encode(&registry);
    assert_eq!(metric(&text, QUEUE_COUNT), 1.0);
    assert_eq!(metric(&text, QUEUE_SUM), 1.0);
    assert_eq!(metric(&text, WORK_COUNT), 0.0);

    queue.add("a"); // t = 1, while processing
    tokio::time::advance(Duration::from_secs(2)).await;
    queue.done(&a); // worked 2 s
    let text = encode(&registry);
    assert_eq!(metric(&text, WORK_COUNT), 1.0);
    assert_eq!(metric(&text, WORK_SUM), 2.0);

    tokio::time::advance(Duration::from_secs(4)).await;
    let a = queue.get().await.unwrap(); // dirty since t = 1: waited 6 s
    queue.done(&a); // worked 0 s
    let text = encode(&registry);
    assert_eq!(metric(&text, QUEUE_COUNT), 2.0);
    assert_eq!(metric(&text, QUEUE_SUM), 7.0);
    assert_eq!(metric(&text, WORK_COUNT), 2.0);
    assert_eq!(metric(&text, WORK_SUM), 2.0);
    assert_eq!(metric(&text, DEPTH), 0.0);
    // The 1 s observation falls in the `le="10.0"` bucket, not in `le="1e-8"`.
    assert!(text.contains(r#"workqueue_queue_duration_seconds_bucket{le="1e-8",name="test"} 0"#));
    assert!(text.contains(r#"workqueue_queue_duration_seconds_bucket{le="10.0",name="test"} 2"#));
    queue.shut_down();
}

#[tokio::test(start_paused = true)]
async fn unfinished_work_gauges_update_every_500ms_until_shutdown() {
    let (registry, metrics) = registered();
    let queue = Queue::with_config(QueueConfig::new().name("test").metrics(&metrics));
    settle().await;
    queue.add("a");
    queue.add("b");
    let a = queue.get().await.unwrap(); // started at t = 0
    tokio::time::advance(Duration::from_millis(400)).await;
    settle().await;
    let text = encode(&registry);
    assert_eq!(metric(&text, UNFINISHED), 0.0, "no tick yet");
    let _b = queue.get().await.unwrap(); // started at t = 0.4
    tokio::time::advance(Duration::from_millis(100)).await; // tick at t = 0.5
    settle().await;
    let text = encode(&registry);
    assert!((metric(&text, UNFINISHED) - 0.6).abs() < 1e-9, "0.5 + 0.1");
    assert!((metric(&text, LONGEST) - 0.5).abs() < 1e-9);

    queue.done(&a);
    tokio::time::advance(Duration::from_millis(500)).await; // tick at t = 1.0
    settle().await;
    let text = encode(&registry);
    assert!(
        (metric(&text, UNFINISHED) - 0.6).abs() < 1e-9,
        "only b: 1.0 - 0.4"
    );
    assert!((metric(&text, LONGEST) - 0.6).abs() < 1e-9);

    queue.shut_down();
    tokio::time::advance(Duration::from_millis(1000)).await;
    settle().await;
    let text = encode(&registry);
    assert!(
        (metric(&text, UNFINISHED) - 0.6).abs() < 1e-9,
        "no update after shutdown"
    );
}

#[tokio::test(start_paused = true)]
async fn retries_count_every_add_after_before_shutdown() {
    let (registry, metrics) = registered();
    let queue = RateLimitingQueue::with_config(
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1)),
        QueueConfig::new().name("test").metrics(&metrics),
    );
    queue.add_rate_limited("a");
    queue.add_after("b", Duration::ZERO);
    queue.add_after("c", Duration::from_secs(1));
    let text = encode(&registry);
    assert_eq!(metric(&text, RETRIES), 3.0);
    assert_eq!(metric(&text, ADDS), 1.0, "only b is in the queue yet");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let text = encode(&registry);
    assert_eq!(metric(&text, ADDS), 3.0);
    assert_eq!(metric(&text, DEPTH), 3.0);
    queue.add("d"); // a plain add is no retry
    queue.shut_down();
    queue.add_rate_limited("e");
    queue.add_after("f", Duration::ZERO);
    let text = encode(&registry);
    assert_eq!(metric(&text, RETRIES), 3.0);
    assert_eq!(metric(&text, ADDS), 4.0);
}

#[tokio::test(start_paused = true)]
async fn unnamed_queue_reports_no_metrics() {
    let (registry, metrics) = registered();
    let queue = RateLimitingQueue::with_config(
        default_controller_rate_limiter(),
        QueueConfig::new().metrics(&metrics),
    );
    queue.add("a");
    queue.add_rate_limited("b");
    let a = queue.get().await.unwrap();
    queue.done(&a);
    let text = encode(&registry);
    assert!(!text.contains("name="), "{text}");
    queue.shut_down();
}

#[tokio::test(start_paused = true)]
async fn queues_are_labelled_by_name() {
    let (registry, metrics) = registered();
    let first = Queue::with_config(QueueConfig::new().name("first").metrics(&metrics));
    let second = Queue::with_config(QueueConfig::new().name("second").metrics(&metrics));
    first.add(1);
    second.add(1);
    second.add(2);
    let text = encode(&registry);
    assert_eq!(metric(&text, r#"workqueue_depth{name="first"}"#), 1.0);
    assert_eq!(metric(&text, r#"workqueue_depth{name="second"}"#), 2.0);
    first.shut_down();
    second.shut_down();
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

#[tokio::test(start_paused = true)]
async fn background_tasks_end_at_shutdown_or_drop() {
    let (_registry, metrics) = registered();
    let config = QueueConfig::new().name("test").metrics(&metrics);
    let before = alive_tasks();

    let queue: Queue<u8> = Queue::with_config(config.clone());
    assert_eq!(alive_tasks(), before + 1, "unfinished-work task");
    queue.shut_down();
    settle().await;
    assert_eq!(alive_tasks(), before);

    let queue: Queue<u8> = Queue::with_config(config.clone());
    drop(queue);
    settle().await;
    assert_eq!(alive_tasks(), before);

    let queue: RateLimitingQueue<u8> =
        RateLimitingQueue::with_config(default_controller_rate_limiter(), config.clone());
    queue.add_rate_limited(1);
    assert_eq!(alive_tasks(), before + 2, "unfinished-work and timer tasks");
    queue.shut_down_with_drain().await;
    settle().await;
    assert_eq!(alive_tasks(), before);

    let queue: DelayingQueue<u8> = DelayingQueue::with_config(config);
    queue.add_after(1, Duration::from_secs(10));
    drop(queue);
    settle().await;
    assert_eq!(alive_tasks(), before);

    let unnamed: Queue<u8> = Queue::new();
    assert_eq!(alive_tasks(), before, "an unnamed queue starts no task");
    drop(unnamed);
}
