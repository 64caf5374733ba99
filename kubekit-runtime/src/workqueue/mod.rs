//! Work queues for controllers: kubekit's counterpart of client-go's `util/workqueue`.
//!
//! A controller does not act on watch events one by one. Its event handlers reduce each
//! event to a key (usually `namespace/name`) and add the key to a work queue; a few worker
//! tasks take keys from the queue and reconcile the object the key names, reading its
//! latest state from a cache. The queue is what makes this safe and cheap:
//!
//! - **De-duplication.** A key added ten times before a worker gets to it is processed
//!   once.
//! - **Exclusion.** A key is never processed by two workers at once. If it changes while
//!   being processed, it is queued again when its worker is done, so the latest state is
//!   always seen.
//! - **Retries with backoff.** A failed key is re-added after a delay that grows with its
//!   failures, and the retry rate of the whole queue is capped.
//! - **Graceful shutdown.** After shutdown, workers finish what is queued and then learn
//!   that the queue is closed.
//!
//! This module knows nothing of Kubernetes: items are any `Hash + Eq + Clone + Send` type.
//!
//! # The pieces
//!
//! | type | adds to the one above | client-go |
//! |---|---|---|
//! | [`Queue`] | the FIFO with the dirty and processing sets: `add`, `get`, `done`, `len`, `shut_down`, `shut_down_with_drain`, `shutting_down` | `TypedInterface` |
//! | [`DelayingQueue`] | `add_after(item, delay)`, driven by one timer task | `TypedDelayingInterface` |
//! | [`RateLimitingQueue`] | `add_rate_limited`, `forget`, `num_requeues`, paced by a [`RateLimiter`] | `TypedRateLimitingInterface` |
//!
//! Rate limiters: [`ItemExponentialFailureRateLimiter`], [`ItemFastSlowRateLimiter`],
//! [`BucketRateLimiter`], [`MaxOfRateLimiter`], [`WithMaxWaitRateLimiter`], and the two
//! defaults [`default_controller_rate_limiter`] and [`default_item_based_rate_limiter`].
//!
//! Metrics: give a queue a name and a [`WorkqueueMetrics`] through [`QueueConfig`] and it
//! reports client-go's `workqueue_*` metrics into your `prometheus_client` registry. An
//! unnamed queue reports nothing and pays (almost) nothing.
//!
//! Every queue type is a cheap handle (an `Arc` inside): clone it into each worker and
//! each event handler. No method holds a lock across an `.await`.
//!
//! # The worker loop
//!
//! Every controller runs the same loop on each of its workers: get a key, process it, and
//! then, in this order, either **forget** it (success: its backoff starts over next time)
//! or **re-add it rate-limited** (failure, while it has retries left), and finally mark it
//! **done** (always, exactly once per `get`). The loop ends when `get` returns `None`:
//! the queue is shut down and empty.
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::time::Duration;
//!
//! use kubekit::workqueue::{RateLimitingQueue, default_controller_rate_limiter};
//!
//! /// How often a key is retried before the controller gives up on it.
//! const MAX_RETRIES: usize = 5;
//!
//! /// The business logic: bring the object named by `key` to its desired state.
//! async fn reconcile(key: &str, attempts: &AtomicUsize) -> Result<(), String> {
//!     attempts.fetch_add(1, Ordering::Relaxed);
//!     if key.ends_with("broken") {
//!         return Err(format!("{key} cannot be synced"));
//!     }
//!     Ok(())
//! }
//!
//! /// Handles one key; returns `false` once the queue is shut down and empty.
//! async fn process_next_item(queue: &RateLimitingQueue<String>, attempts: &AtomicUsize) -> bool {
//!     let Some(key) = queue.get().await else {
//!         return false;
//!     };
//!     match reconcile(&key, attempts).await {
//!         // Success: forget the key's failures so its next problem starts at 5 ms.
//!         Ok(()) => queue.forget(&key),
//!         // Failure with retries left: try again after the key's backoff.
//!         Err(_) if queue.num_requeues(&key) < MAX_RETRIES => {
//!             queue.add_rate_limited(key.clone());
//!         }
//!         // Out of retries: give up (report the error), and forget the key.
//!         Err(err) => {
//!             eprintln!("dropping {key} out of the queue: {err}");
//!             queue.forget(&key);
//!         }
//!     }
//!     // Always: releases the key for other workers (and re-queues it if it was added
//!     // again while we worked on it).
//!     queue.done(&key);
//!     true
//! }
//!
//! async fn run_worker(queue: RateLimitingQueue<String>, attempts: Arc<AtomicUsize>) {
//!     while process_next_item(&queue, &attempts).await {}
//! }
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! async fn main() {
//!     let queue = RateLimitingQueue::new(default_controller_rate_limiter());
//!     let attempts = Arc::new(AtomicUsize::new(0));
//!     let workers: Vec<_> = (0..2)
//!         .map(|_| tokio::spawn(run_worker(queue.clone(), Arc::clone(&attempts))))
//!         .collect();
//!
//!     // What the event handlers do: add keys, as often as events arrive.
//!     for key in ["default/web", "default/db", "default/web", "default/broken"] {
//!         queue.add(key.to_string());
//!     }
//!
//!     // Later, on SIGTERM: stop taking new keys, let the workers finish.
//!     tokio::time::sleep(Duration::from_secs(1)).await;
//!     queue.shut_down_with_drain().await;
//!     for worker in workers {
//!         worker.await.unwrap();
//!     }
//!     // web and db once each (the second web was merged), broken 1 + 5 times.
//!     assert_eq!(attempts.load(Ordering::Relaxed), 2 + 1 + MAX_RETRIES);
//! }
//! ```
//!
//! # Where kubekit differs from client-go
//!
//! - `get` returns `Option<T>`: `None` is client-go's `shutdown == true`.
//! - `done` for an item that is not being processed does nothing (client-go would queue a
//!   second copy of an item that is queued and not processing).
//! - Shutting down a [`DelayingQueue`] first adds the items whose delay has already passed,
//!   and both `shut_down` and `shut_down_with_drain` end its timer task.
//! - Metrics go to a [`WorkqueueMetrics`] you pass in, not to a process-global provider.

pub mod delaying;
mod lock;
pub mod metrics;
pub mod queue;
pub mod rate_limiter;
pub mod rate_limiting;

#[cfg(test)]
mod tests;

pub use delaying::DelayingQueue;
pub use metrics::WorkqueueMetrics;
pub use queue::{Queue, QueueConfig};
pub use rate_limiter::{
    BucketRateLimiter, INFINITE_DELAY, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter, default_controller_rate_limiter,
    default_item_based_rate_limiter,
};
pub use rate_limiting::RateLimitingQueue;
