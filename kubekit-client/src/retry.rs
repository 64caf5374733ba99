//! Retrying a read-modify-write (client-go's `util/retry`, with apimachinery's
//! `wait.Backoff`).
//!
//! An update sent with a `resourceVersion` the server has moved past is refused with 409
//! Conflict. [`retry_on_conflict`] runs the whole read-modify-write again (read the
//! object anew, change it, send it) until it goes through, the backoff's attempts are
//! spent, or another error comes; [`on_error`] does the same for any errors a predicate
//! picks.
//!
//! # Contract
//!
//! - The function runs at most [`Backoff::steps`] times, with a wait of [`Backoff::step`]
//!   between runs; time is tokio's clock. It runs at least once: with `steps: 0`, client-go
//!   never calls it and reports success.
//! - An error the predicate does not retry is returned at once; when the attempts are
//!   spent, the last error is returned (the predicate is not asked about it).
//! - Each run must read what it changes afresh: retrying a write of the same stale object
//!   only repeats the conflict.
//!
//! ```no_run
//! # async fn demo(clientset: kubekit::clientset::Clientset) -> Result<(), kubekit::rest::Error> {
//! use kubekit::clientset::{GetOptions, UpdateOptions};
//! use kubekit::retry::{Backoff, retry_on_conflict};
//!
//! let config_maps = clientset.core_v1().config_maps("demo");
//! let config_maps = &config_maps;
//! retry_on_conflict(Backoff::DEFAULT_RETRY, || async move {
//!     let mut cm = config_maps.get("settings", &GetOptions::default()).await?;
//!     cm.data.get_or_insert_default().insert("mode".into(), "fast".into());
//!     config_maps.update(&cm, &UpdateOptions::default()).await
//! })
//! .await?;
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::time::Duration;

/// How often and how far apart to retry (apimachinery's `wait.Backoff`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The wait before the first retry; each later wait is the previous one times
    /// `factor`.
    pub duration: Duration,
    /// What each wait is multiplied by for the next one (1.0: a constant wait; 0 counts as
    /// 1.0, and the cap still applies).
    pub factor: f64,
    /// Each wait is lengthened by up to this fraction of itself, at random (0: none).
    pub jitter: f64,
    /// Attempts in all (the first run included); each [`step`](Self::step) uses one.
    pub steps: u32,
    /// The longest a wait may grow to; a step that reaches it ends the backoff (no steps
    /// are left after it).
    pub cap: Option<Duration>,
}

impl Backoff {
    /// client-go's `retry.DefaultRetry`, for conflicts between writers: 5 attempts, 10 ms
    /// apart, 10% jitter.
    pub const DEFAULT_RETRY: Self = Self {
        duration: Duration::from_millis(10),
        factor: 1.0,
        jitter: 0.1,
        steps: 5,
        cap: None,
    };

    /// client-go's `retry.DefaultBackoff`, for a server that may need time: 4 attempts,
    /// waits of 10, 50 and 250 ms, 10% jitter.
    pub const DEFAULT_BACKOFF: Self = Self {
        duration: Duration::from_millis(10),
        factor: 5.0,
        jitter: 0.1,
        steps: 4,
        cap: None,
    };

    /// The next wait (with its jitter), using up one step and growing the one after
    /// (`wait.Backoff.Step`). With no steps left the wait stays as it is. Waits saturate
    /// at `Duration::MAX` rather than overflow.
    pub fn step(&mut self) -> Duration {
        let wait = self.duration;
        if self.steps > 0 {
            self.steps -= 1;
            let factor = if self.factor == 0.0 { 1.0 } else { self.factor };
            self.duration = scaled(wait, factor);
            if let Some(cap) = self.cap.filter(|cap| self.duration > *cap) {
                self.duration = cap;
                self.steps = 0;
            }
        }
        jitter(wait, self.jitter)
    }
}

/// `duration` lengthened by up to `max_factor` of itself, at random (apimachinery's
/// `wait.Jitter`); as it is for a `max_factor` of 0 or less. Saturates at `Duration::MAX`.
pub fn jitter(duration: Duration, max_factor: f64) -> Duration {
    match max_factor > 0.0 {
        true => duration.saturating_add(scaled(duration, max_factor * fastrand::f64())),
        false => duration,
    }
}

/// `wait` times `by`: zero for a negative or NaN `by`, `Duration::MAX` past it.
fn scaled(wait: Duration, by: f64) -> Duration {
    match Duration::try_from_secs_f64(wait.as_secs_f64() * by) {
        Ok(d) => d,
        Err(_) if by > 0.0 => Duration::MAX,
        Err(_) => Duration::ZERO,
    }
}

/// Runs `f` until it succeeds, fails with an error `retriable` refuses, or `backoff`'s
/// attempts are spent (then the last error is returned); see the [module docs](self).
pub async fn on_error<T, E, F, Fut>(
    mut backoff: Backoff,
    mut retriable: impl FnMut(&E) -> bool,
    mut f: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    loop {
        let error = match f().await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        if backoff.steps <= 1 || !retriable(&error) {
            return Err(error);
        }
        let wait = backoff.step();
        if backoff.steps == 0 {
            // The cap was reached: the backoff has no attempt left.
            return Err(error);
        }
        tokio::time::sleep(wait).await;
    }
}

/// Runs the read-modify-write `f` again while the server answers 409 Conflict
/// (client-go's `retry.RetryOnConflict`); see the [module docs](self).
pub async fn retry_on_conflict<T, F, Fut>(backoff: Backoff, f: F) -> Result<T, crate::rest::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, crate::rest::Error>>,
{
    on_error(backoff, crate::rest::Error::is_conflict, f).await
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    const NO_JITTER: Backoff = Backoff {
        jitter: 0.0,
        ..Backoff::DEFAULT_BACKOFF
    };

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn steps_grow_by_the_factor_until_the_steps_are_spent() {
        let mut b = NO_JITTER;
        let waits: Vec<_> = (0..5).map(|_| b.step()).collect();
        assert_eq!(waits, [ms(10), ms(50), ms(250), ms(1250), ms(6250)]);
        assert_eq!(b.steps, 0);
        assert_eq!(b.step(), ms(6250), "no steps left: the wait stays");
    }

    #[test]
    fn reaching_the_cap_ends_the_backoff() {
        let mut b = Backoff {
            cap: Some(ms(100)),
            ..NO_JITTER
        };
        assert_eq!((b.step(), b.steps), (ms(10), 3));
        assert_eq!(
            (b.step(), b.steps),
            (ms(50), 0),
            "the next wait, 250 ms, passed the cap"
        );
        assert_eq!(b.duration, ms(100));
    }

    #[test]
    fn huge_or_odd_factors_saturate_instead_of_panicking() {
        let mut huge = Backoff {
            factor: f64::INFINITY,
            jitter: f64::MAX,
            steps: 100,
            ..NO_JITTER
        };
        for _ in 0..100 {
            huge.step();
        }
        assert_eq!(huge.duration, Duration::MAX);
        let mut negative = Backoff {
            factor: -2.0,
            ..NO_JITTER
        };
        assert_eq!(
            (negative.step(), negative.duration),
            (ms(10), Duration::ZERO)
        );
    }

    #[test]
    fn jitter_lengthens_a_wait_by_at_most_its_fraction() {
        for _ in 0..100 {
            let mut backoff = Backoff::DEFAULT_RETRY;
            let wait = backoff.step();
            assert!(wait >= ms(10) && wait <= ms(11), "{wait:?}");
        }
        for no_jitter in [0.0, -1.0, f64::NAN] {
            assert_eq!(jitter(ms(10), no_jitter), ms(10));
        }
    }

    /// Runs `on_error` over `results` (one per attempt, retrying errors under 100) under
    /// tokio's paused clock: what it returned, the attempts made, the time it waited.
    async fn run(
        backoff: Backoff,
        results: &[Result<&str, u16>],
    ) -> (Result<String, u16>, usize, Duration) {
        let attempts = Cell::new(0);
        let start = tokio::time::Instant::now();
        let result = on_error(
            backoff,
            |code| *code < 100,
            || {
                let result = results[attempts.get()].map(String::from);
                attempts.set(attempts.get() + 1);
                async move { result }
            },
        )
        .await;
        (result, attempts.get(), start.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn a_retriable_error_runs_again_after_each_wait_until_success() {
        let (result, attempts, waited) = run(NO_JITTER, &[Err(1), Err(2), Ok("done")]).await;
        assert_eq!((result, attempts, waited), (Ok("done".into()), 3, ms(60)));
    }

    #[tokio::test(start_paused = true)]
    async fn when_the_attempts_are_spent_the_last_error_is_returned() {
        let errors = [Err(1), Err(2), Err(3), Err(4), Ok("never")];
        let (result, attempts, waited) = run(NO_JITTER, &errors).await;
        assert_eq!((result, attempts, waited), (Err(4), 4, ms(310)));
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_the_predicate_refuses_is_returned_at_once() {
        let (result, attempts, waited) = run(NO_JITTER, &[Err(1), Err(404), Ok("never")]).await;
        assert_eq!((result, attempts, waited), (Err(404), 2, ms(10)));
    }

    #[tokio::test(start_paused = true)]
    async fn no_steps_still_runs_once_and_a_cap_stops_without_a_useless_wait() {
        let none = Backoff {
            steps: 0,
            ..NO_JITTER
        };
        assert_eq!(run(none, &[Err(1), Ok("never")]).await, (Err(1), 1, ms(0)));
        let capped = Backoff {
            cap: Some(ms(20)),
            ..NO_JITTER
        };
        assert_eq!(
            run(capped, &[Err(1), Err(2), Ok("never")]).await,
            (Err(1), 1, ms(0))
        );
    }
}
