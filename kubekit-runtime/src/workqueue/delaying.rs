//! A work queue that can add an item later: [`DelayingQueue::add_after`].
//!
//! # Contract
//!
//! - `add_after(item, d)` adds `item` to the queue (with [`Queue::add`] semantics) once `d`
//!   has elapsed. A zero `d` adds at once.
//! - One waiting entry per item: a second `add_after` for an item that is still waiting only
//!   ever moves it **earlier**; a later deadline never delays an earlier one.
//! - Items whose deadlines are equal are added in the order of their `add_after` calls.
//! - A waiting item is independent of the queue itself: it may also be queued or being
//!   processed; when its deadline comes it is simply `add`ed (and de-duplicated then).
//! - [`cancel_waiting`](DelayingQueue::cancel_waiting) drops an item's waiting entry: it
//!   is not added when its deadline comes. It does not take the item out of the queue.
//! - At shutdown, the items whose deadline has passed are added before the queue stops
//!   accepting items, so they are still handed out. Items still waiting are dropped, as
//!   client-go drops them (an `add` after shutdown is ignored). `add_after` after shutdown
//!   does nothing.
//!
//! # Concurrency
//!
//! `DelayingQueue` is a cheap cloneable handle; every method may be called from any task.
//! The waiting items sit in one ordered map behind a short lock, driven by **one** tokio
//! task per queue (no task or timer per item). That task is started when the queue is
//! created (so creation needs a tokio runtime) and ends when the queue shuts down or its
//! last handle is dropped. Time is tokio's: tests can use `tokio::time::pause`.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use hashbrown::HashMap;
use hashbrown::hash_map::Entry;
use parking_lot::Mutex;
use prometheus_client::metrics::counter::Counter;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::queue::{Queue, QueueConfig};

/// Deadlines further away than this are treated as "this far away" (about 30 years).
const FAR_FUTURE: Duration = Duration::from_secs(60 * 60 * 24 * 365 * 30);

/// The timer task never sleeps longer than this in one go, whatever the next deadline.
const MAX_SLEEP: Duration = Duration::from_secs(60 * 60);

/// A [`Queue`] plus [`add_after`](Self::add_after): add an item once a delay has passed.
///
/// Every method of [`Queue`] is here too, with the same meaning. See the
/// [module docs](self) for the rules of `add_after`.
///
/// ```
/// use std::time::Duration;
/// use kubekit::workqueue::DelayingQueue;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let queue = DelayingQueue::new();
/// queue.add_after("default/a".to_string(), Duration::from_secs(10));
/// queue.add_after("default/a".to_string(), Duration::from_secs(1)); // moves it earlier
/// queue.add_after("default/a".to_string(), Duration::from_secs(60)); // ignored: later
/// assert_eq!(queue.len(), 0);
///
/// let start = tokio::time::Instant::now();
/// let item = queue.get().await.unwrap();
/// assert_eq!(item, "default/a");
/// assert_eq!(start.elapsed(), Duration::from_secs(1));
/// queue.done(&item);
/// queue.shut_down();
/// # }
/// ```
pub struct DelayingQueue<T> {
    inner: Arc<DelayingInner<T>>,
}

impl<T> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.inner.queue)
            .field("waiting", &self.inner.timers.state.lock().by_deadline.len())
            .finish()
    }
}

struct DelayingInner<T> {
    queue: Queue<T>,
    timers: Arc<Timers<T>>,
    /// `workqueue_retries_total` of a named queue.
    retries: Option<Counter>,
}

impl<T> Drop for DelayingInner<T> {
    fn drop(&mut self) {
        // The last handle is gone: end the timer task and free what still waits.
        self.timers.stop();
    }
}

/// The waiting items, shared by the handles and the timer task.
struct Timers<T> {
    state: Mutex<TimerState<T>>,
    /// Wakes the timer task: a new earliest deadline, or stop.
    wake: Notify,
}

/// Identifies one waiting entry: its deadline, then its arrival order.
type Key = (Instant, u64);

struct TimerState<T> {
    /// Waiting items by deadline (the first one is the next to fire).
    by_deadline: BTreeMap<Key, T>,
    /// The key of each waiting item.
    by_item: HashMap<T, Key>,
    /// Arrival counter, to keep equal deadlines in call order.
    next_seq: u64,
    stopped: bool,
}

impl<T> Timers<T> {
    /// Stops the timer task and drops every waiting item.
    fn stop(&self) {
        {
            let mut state = self.state.lock();
            state.stopped = true;
            state.by_deadline = BTreeMap::new();
            state.by_item = HashMap::new();
        }
        self.wake.notify_one();
    }
}

impl<T> TimerState<T>
where
    T: Hash + Eq + Clone,
{
    /// Records that `item` is due at `deadline`, unless it already waits for an earlier or
    /// equal deadline. Returns whether the next deadline moved earlier.
    fn insert(&mut self, item: T, deadline: Instant) -> bool {
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = (deadline, seq);
        match self.by_item.entry(item) {
            Entry::Occupied(mut occupied) => {
                let old = *occupied.get();
                if old.0 <= deadline {
                    return false;
                }
                let Some(item) = self.by_deadline.remove(&old) else {
                    unreachable!("every waiting item has a deadline entry");
                };
                occupied.insert(key);
                self.by_deadline.insert(key, item);
            }
            Entry::Vacant(vacant) => {
                let item = vacant.key().clone();
                vacant.insert(key);
                self.by_deadline.insert(key, item);
            }
        }
        self.by_deadline
            .first_key_value()
            .is_some_and(|(first, _)| *first == key)
    }

    /// Drops `item`'s waiting entry; whether it had one.
    fn remove(&mut self, item: &T) -> bool {
        let Some(key) = self.by_item.remove(item) else {
            return false;
        };
        self.by_deadline.remove(&key);
        true
    }

    /// Removes the items due at `now` (in deadline order) and hands them to `add`.
    fn fire_due(&mut self, now: Instant, mut add: impl FnMut(T)) {
        while let Some(entry) = self.by_deadline.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let item = entry.remove();
            self.by_item.remove(&item);
            add(item);
        }
    }
}

impl<T> Default for DelayingQueue<T>
where
    T: Hash + Eq + Clone + Send + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> DelayingQueue<T>
where
    T: Hash + Eq + Clone + Send + 'static,
{
    /// Creates an unnamed delaying queue (no metrics).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime: the queue starts its timer task.
    pub fn new() -> Self {
        Self::with_config(QueueConfig::new())
    }

    /// Creates a delaying queue from `config`; a named queue with metrics also counts
    /// `workqueue_retries_total`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime: the queue starts its timer task.
    pub fn with_config(config: QueueConfig) -> Self {
        let retries = match (&config.name, &config.metrics) {
            (Some(name), Some(metrics)) => Some(metrics.retries_for(name)),
            _ => None,
        };
        let queue = Queue::with_config(config);
        let timers = Arc::new(Timers {
            state: Mutex::new(TimerState {
                by_deadline: BTreeMap::new(),
                by_item: HashMap::new(),
                next_seq: 0,
                stopped: false,
            }),
            wake: Notify::new(),
        });
        tokio::spawn(run_timers(Arc::clone(&timers), queue.clone()));
        Self {
            inner: Arc::new(DelayingInner {
                queue,
                timers,
                retries,
            }),
        }
    }

    /// Adds `item` once `delay` has passed; at once if `delay` is zero.
    ///
    /// If `item` is already waiting, its deadline only moves earlier. Ignored once the
    /// queue is shutting down. Counts a retry in the queue's metrics.
    pub fn add_after(&self, item: T, delay: Duration) {
        let inner = &*self.inner;
        if inner.queue.shutting_down() {
            return;
        }
        if let Some(retries) = &inner.retries {
            retries.inc();
        }
        if delay.is_zero() {
            inner.queue.add(item);
            return;
        }
        let now = Instant::now();
        let deadline = now
            .checked_add(delay.min(FAR_FUTURE))
            .unwrap_or(now + MAX_SLEEP);
        let earliest = {
            let mut state = inner.timers.state.lock();
            if state.stopped {
                return;
            }
            state.insert(item, deadline)
        };
        if earliest {
            inner.timers.wake.notify_one();
        }
    }

    /// Drops the waiting entry of `item` (an [`add_after`](Self::add_after) whose deadline
    /// has not come): it will not be added then. Returns whether it was waiting. An item
    /// already in the queue stays there. The timer task may still wake at the old
    /// deadline, and finds nothing to add.
    pub fn cancel_waiting(&self, item: &T) -> bool {
        self.inner.timers.state.lock().remove(item)
    }

    /// See [`Queue::add`].
    pub fn add(&self, item: T) {
        self.inner.queue.add(item);
    }

    /// See [`Queue::add_low_priority`].
    pub fn add_low_priority(&self, item: T) {
        self.inner.queue.add_low_priority(item);
    }

    /// See [`Queue::get`].
    pub async fn get(&self) -> Option<T> {
        self.inner.queue.get().await
    }

    /// See [`Queue::done`].
    pub fn done(&self, item: &T) {
        self.inner.queue.done(item);
    }

    /// See [`Queue::len`]. Items waiting for their deadline are not counted.
    pub fn len(&self) -> usize {
        self.inner.queue.len()
    }

    /// See [`Queue::is_empty`].
    pub fn is_empty(&self) -> bool {
        self.inner.queue.is_empty()
    }

    /// Adds the items whose deadline has passed, drops the ones still waiting, ends the
    /// timer task and shuts the queue down (see [`Queue::shut_down`]).
    pub fn shut_down(&self) {
        self.flush_and_stop();
        self.inner.queue.shut_down();
    }

    /// Like [`shut_down`](Self::shut_down), then waits until no item is being processed
    /// (see [`Queue::shut_down_with_drain`]).
    pub async fn shut_down_with_drain(&self) {
        self.flush_and_stop();
        self.inner.queue.shut_down_with_drain().await;
    }

    /// See [`Queue::shutting_down`].
    pub fn shutting_down(&self) -> bool {
        self.inner.queue.shutting_down()
    }

    /// Moves the due items into the queue, then stops the timers.
    fn flush_and_stop(&self) {
        let inner = &*self.inner;
        {
            let mut state = inner.timers.state.lock();
            if !state.stopped {
                state.fire_due(Instant::now(), |item| inner.queue.add(item));
            }
        }
        inner.timers.stop();
    }
}

/// The timer task: adds each waiting item to `queue` when its deadline comes.
async fn run_timers<T>(timers: Arc<Timers<T>>, queue: Queue<T>)
where
    T: Hash + Eq + Clone + Send + 'static,
{
    loop {
        let next = {
            let mut state = timers.state.lock();
            if state.stopped {
                return;
            }
            // Adding under the timer lock: a concurrent shutdown cannot slip between taking
            // an item out and adding it, so nothing due is lost.
            state.fire_due(Instant::now(), |item| queue.add(item));
            state.by_deadline.first_key_value().map(|(key, _)| key.0)
        };
        // A wake sent since the lock was released is kept as a permit by `Notify`.
        let woken = timers.wake.notified();
        match next {
            Some(deadline) => {
                let deadline = deadline.min(Instant::now() + MAX_SLEEP);
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => {}
                    () = woken => {}
                }
            }
            None => woken.await,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    fn poll_once<F: std::future::Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    const SEC: Duration = Duration::from_secs(1);

    /// Lets the timer task run at the current (paused) instant.
    async fn settle() {
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_adds_the_item_once_the_delay_has_passed() {
        let queue = DelayingQueue::new();
        queue.add_after("a", 5 * SEC);
        tokio::time::sleep(5 * SEC - Duration::from_millis(1)).await;
        settle().await;
        assert_eq!(queue.len(), 0);
        tokio::time::sleep(Duration::from_millis(1)).await;
        settle().await;
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.get().await, Some("a"));
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_with_zero_delay_adds_at_once() {
        let queue = DelayingQueue::new();
        queue.add_after("a", Duration::ZERO);
        assert_eq!(queue.len(), 1);
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn second_add_after_moves_a_waiting_item_earlier() {
        let queue = DelayingQueue::new();
        let start = Instant::now();
        queue.add_after("a", 10 * SEC);
        queue.add_after("a", 2 * SEC);
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(start.elapsed(), 2 * SEC);
        queue.done(&"a");
        // No second copy fires at 10 s.
        tokio::time::sleep(20 * SEC).await;
        settle().await;
        assert_eq!(queue.len(), 0);
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn later_add_after_never_delays_an_earlier_one() {
        let queue = DelayingQueue::new();
        let start = Instant::now();
        queue.add_after("a", 2 * SEC);
        queue.add_after("a", 10 * SEC);
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(start.elapsed(), 2 * SEC);
        queue.done(&"a");
        tokio::time::sleep(20 * SEC).await;
        settle().await;
        assert_eq!(
            queue.len(),
            0,
            "the later request was merged into the earlier"
        );
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_waiting_item_is_not_added_and_the_others_still_are() {
        let queue = DelayingQueue::new();
        queue.add_after("a", 2 * SEC);
        queue.add_after("b", 3 * SEC);
        queue.add("c");
        assert!(queue.cancel_waiting(&"a"));
        assert!(!queue.cancel_waiting(&"a"), "no longer waiting");
        assert!(!queue.cancel_waiting(&"c"), "queued, not waiting");
        tokio::time::sleep(10 * SEC).await;
        settle().await;
        assert_eq!(queue.len(), 2, "c stays queued, b fired, a did not");
        assert_eq!(queue.get().await, Some("c"));
        assert_eq!(queue.get().await, Some("b"));
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_items_are_added_in_deadline_order() {
        let queue = DelayingQueue::new();
        queue.add_after("c", 3 * SEC);
        queue.add_after("a", SEC);
        queue.add_after("b", 2 * SEC);
        queue.add_after("b2", 2 * SEC);
        for expected in ["a", "b", "b2", "c"] {
            let item = queue.get().await.unwrap();
            assert_eq!(item, expected);
            queue.done(&item);
        }
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn new_earliest_deadline_wakes_the_timer() {
        let queue = DelayingQueue::new();
        let start = Instant::now();
        queue.add_after("late", 100 * SEC);
        settle().await; // the timer now sleeps towards 100 s
        queue.add_after("early", SEC);
        assert_eq!(queue.get().await, Some("early"));
        assert_eq!(start.elapsed(), SEC);
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn fired_item_that_is_already_queued_is_not_duplicated() {
        let queue = DelayingQueue::new();
        queue.add("a");
        queue.add_after("a", SEC);
        tokio::time::sleep(2 * SEC).await;
        settle().await;
        assert_eq!(queue.len(), 1);
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn fired_item_that_is_processing_is_requeued_at_done() {
        let queue = DelayingQueue::new();
        queue.add("a");
        let a = queue.get().await.unwrap();
        queue.add_after("a", SEC);
        tokio::time::sleep(2 * SEC).await;
        settle().await;
        assert_eq!(queue.len(), 0);
        queue.done(&a);
        assert_eq!(queue.len(), 1);
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_adds_due_items_and_drops_waiting_ones() {
        let queue = DelayingQueue::new();
        queue.add_after("due", SEC);
        queue.add_after("waiting", 10 * SEC);
        // Time moves on without letting the timer task run.
        tokio::time::advance(SEC).await;
        queue.shut_down();
        assert_eq!(queue.get().await, Some("due"));
        assert_eq!(queue.get().await, None);
        assert_eq!(queue.inner.timers.state.lock().by_item.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_after_shut_down_is_ignored() {
        let queue = DelayingQueue::new();
        queue.shut_down();
        queue.add_after("a", Duration::ZERO);
        queue.add_after("a", SEC);
        assert_eq!(queue.inner.timers.state.lock().by_item.len(), 0);
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn timer_task_ends_on_shut_down() {
        let queue: DelayingQueue<&str> = DelayingQueue::new();
        queue.add_after("a", 10 * SEC);
        settle().await;
        assert_eq!(Arc::strong_count(&queue.inner.timers), 2, "handle and task");
        queue.shut_down();
        settle().await;
        assert_eq!(
            Arc::strong_count(&queue.inner.timers),
            1,
            "the task is gone"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn timer_task_ends_when_the_last_handle_is_dropped() {
        let queue: DelayingQueue<&str> = DelayingQueue::new();
        queue.add_after("a", 10 * SEC);
        settle().await;
        let timers = Arc::downgrade(&queue.inner.timers);
        drop(queue);
        settle().await;
        assert!(timers.upgrade().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn huge_delay_does_not_overflow() {
        let queue = DelayingQueue::new();
        queue.add_after("a", Duration::MAX);
        tokio::time::sleep(24 * 3600 * SEC).await;
        settle().await;
        assert_eq!(queue.len(), 0);
        queue.shut_down();
    }

    #[tokio::test(start_paused = true)]
    async fn get_waits_across_a_delay() {
        let queue = DelayingQueue::new();
        let mut get = pin!(queue.get());
        assert!(poll_once(get.as_mut()).is_pending());
        queue.add_after("a", SEC);
        assert_eq!(get.await, Some("a"));
        queue.shut_down();
    }
}
