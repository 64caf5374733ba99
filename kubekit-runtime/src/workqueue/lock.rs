//! The lock around a [`Queue`](super::Queue)'s state.
//!
//! # Contract
//!
//! [`StateLock`] is a mutual-exclusion lock for critical sections of a few tens of
//! nanoseconds that never block (the queue's, which never hold it across an `.await`):
//!
//! - Taking it when it is free is one atomic swap; releasing it is one store (the guard's
//!   drop, also on unwind). A blocking mutex (`parking_lot`, `std`) spends a second atomic
//!   read-modify-write on release, to find out whether it must wake a sleeper; in a queue
//!   operation that costs about as much as the rest of the operation.
//! - A thread that finds it taken spins briefly ([`SPIN_ROUNDS`] rounds of exponential
//!   back-off), then yields its time slice ([`YIELDS`] times), then sleeps in steps of
//!   [`SLEEP`] until it gets the lock. Nobody wakes it: the holder's release stays a plain
//!   store. Under sustained contention (workers calling the queue back to back from
//!   several cores), the thread that holds the lock so runs a burst of operations with the
//!   queue's state in its own cache while the others sleep, instead of the state and the
//!   lock moving between cores on every operation, which costs more than the operations.
//! - It is not fair: a sleeping thread gets the lock the first time it finds it free.
//!   Between queue calls, workers do real work, so they seldom meet on the lock at all.
//! - No poisoning: a panic inside a critical section releases the lock (there is none in
//!   the queue's).

use std::time::Duration;

use try_lock::{Locked, TryLock};

/// Rounds of spinning (1, 2, 4, … pause instructions) before yielding.
const SPIN_ROUNDS: u32 = 4;

/// Time-slice yields after spinning, before sleeping.
const YIELDS: u32 = 2;

/// One sleep step of a thread waiting for the lock.
const SLEEP: Duration = Duration::from_micros(50);

/// A test-and-set lock whose release is a plain store; see the [module docs](self).
pub(crate) struct StateLock<T> {
    inner: TryLock<T>,
}

/// Holds a [`StateLock`]; releases it when dropped.
pub(crate) type StateGuard<'a, T> = Locked<'a, T>;

impl<T> StateLock<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self {
            inner: TryLock::new(value),
        }
    }

    /// Takes the lock, waiting as the module docs describe if it is taken.
    #[inline]
    pub(crate) fn lock(&self) -> StateGuard<'_, T> {
        match self.inner.try_lock() {
            Some(guard) => guard,
            None => self.lock_contended(),
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) -> StateGuard<'_, T> {
        let mut attempt = 0_u32;
        loop {
            if attempt < SPIN_ROUNDS {
                for _ in 0..1_u32 << attempt {
                    std::hint::spin_loop();
                }
            } else if attempt < SPIN_ROUNDS + YIELDS {
                std::thread::yield_now();
            } else {
                std::thread::sleep(SLEEP);
            }
            attempt = attempt.saturating_add(1);
            if let Some(guard) = self.inner.try_lock() {
                return guard;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[test]
    fn guard_gives_access_and_releases_on_drop() {
        let lock = StateLock::new(1_u32);
        *lock.lock() += 1;
        assert_eq!(*lock.lock(), 2);
        let guard = lock.lock();
        assert!(
            lock.inner.try_lock().is_none(),
            "held while the guard lives"
        );
        drop(guard);
        assert!(lock.inner.try_lock().is_some(), "released by the drop");
    }

    #[test]
    fn panic_in_a_critical_section_releases_the_lock() {
        let lock = StateLock::new(0_u32);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut guard = lock.lock();
            *guard = 7;
            panic!("inside the critical section");
        }));
        assert!(result.is_err());
        assert_eq!(*lock.lock(), 7);
    }

    #[test]
    fn contended_lock_excludes_and_every_thread_gets_it() {
        const THREADS: usize = 4;
        const ROUNDS: usize = 20_000;
        // A non-atomic read-modify-write of two fields: lost or torn updates would show.
        let lock = Arc::new(StateLock::new((0_usize, 0_usize)));
        let inside = Arc::new(AtomicBool::new(false));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let lock = Arc::clone(&lock);
                let inside = Arc::clone(&inside);
                std::thread::spawn(move || {
                    for _ in 0..ROUNDS {
                        let mut guard = lock.lock();
                        assert!(!inside.swap(true, Ordering::Relaxed), "two holders");
                        let (a, b) = *guard;
                        assert_eq!(a, b);
                        *guard = (a + 1, b + 1);
                        inside.store(false, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("no thread panicked");
        }
        assert_eq!(*lock.lock(), (THREADS * ROUNDS, THREADS * ROUNDS));
    }

    #[test]
    fn waiter_gets_the_lock_after_a_long_hold() {
        let lock = Arc::new(StateLock::new(0_u32));
        let guard = lock.lock();
        let waiter = {
            let lock = Arc::clone(&lock);
            std::thread::spawn(move || *lock.lock() + 1)
        };
        // Long enough for the waiter to go through spinning and yielding into sleeping.
        std::thread::sleep(Duration::from_millis(20));
        drop(guard);
        assert_eq!(waiter.join().expect("waiter"), 1);
    }
}
