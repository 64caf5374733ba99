//! Fault injection: what a test can make the fake do wrong on purpose.
//!
//! # Contract
//!
//! - A failure rule answers the next `n` requests it matches with its `Status` (and
//!   nothing is stored); rules are tried in the order they were added.
//! - A delay rule holds every request it matches for its duration before serving it,
//!   until [`clear`](Faults::clear).
//! - Cutting watches ends every watch open at that moment (the client sees its stream end,
//!   as when a connection drops); later watches are not affected.
//! - An expired watch answers `200` and one `ERROR` event with `410 Expired`, as the real
//!   server does for a resourceVersion it no longer has.

use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::status::ApiError;

/// Which requests a fault applies to: by verb (`get`, `list`, `watch`, `create`,
/// `update`, `patch`, `delete`, `deletecollection`) and resource (plural, e.g.
/// `configmaps`); an unset part matches anything.
///
/// ```
/// use kubekit_fake::RequestMatch;
///
/// let creates_of_config_maps = RequestMatch::any().verb("create").resource("configmaps");
/// # let _ = creates_of_config_maps;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestMatch {
    verb: Option<String>,
    resource: Option<String>,
}

impl RequestMatch {
    /// Matches every request to a resource.
    pub fn any() -> Self {
        Self::default()
    }

    /// Only requests with this verb.
    pub fn verb(mut self, verb: &str) -> Self {
        self.verb = Some(verb.into());
        self
    }

    /// Only requests to this resource (plural name; a subresource counts as its resource).
    pub fn resource(mut self, resource: &str) -> Self {
        self.resource = Some(resource.into());
        self
    }

    fn matches(&self, verb: &str, resource: &str) -> bool {
        self.verb.as_deref().is_none_or(|v| v == verb)
            && self.resource.as_deref().is_none_or(|r| r == resource)
    }
}

#[derive(Debug, Default)]
struct Rules {
    failures: Vec<(RequestMatch, usize, ApiError)>,
    delays: Vec<(RequestMatch, Duration)>,
    expire_watches: usize,
}

/// The faults in force on one server.
#[derive(Debug)]
pub(crate) struct Faults {
    rules: Mutex<Rules>,
    cuts: watch::Sender<u64>,
}

impl Faults {
    pub(crate) fn new() -> Self {
        Self {
            rules: Mutex::new(Rules::default()),
            cuts: watch::Sender::new(0),
        }
    }

    pub(crate) fn fail(&self, on: RequestMatch, times: usize, error: ApiError) {
        self.rules.lock().failures.push((on, times, error));
    }

    pub(crate) fn delay(&self, on: RequestMatch, by: Duration) {
        self.rules.lock().delays.push((on, by));
    }

    pub(crate) fn expire_watches(&self, times: usize) {
        self.rules.lock().expire_watches += times;
    }

    pub(crate) fn cut_watches(&self) {
        self.cuts.send_modify(|n| *n += 1);
    }

    /// A receiver that changes when open watches are cut.
    pub(crate) fn cuts(&self) -> watch::Receiver<u64> {
        self.cuts.subscribe()
    }

    pub(crate) fn clear(&self) {
        *self.rules.lock() = Rules::default();
    }

    /// What to do with a request: how long to wait first, and the error to answer with
    /// instead of serving it (which uses up one of the rule's failures).
    pub(crate) fn take(&self, verb: &str, resource: &str) -> (Duration, Option<ApiError>) {
        let mut rules = self.rules.lock();
        let delay = rules
            .delays
            .iter()
            .filter(|(m, _)| m.matches(verb, resource))
            .map(|(_, d)| *d)
            .max()
            .unwrap_or_default();
        let failure = rules
            .failures
            .iter_mut()
            .find(|(m, left, _)| *left > 0 && m.matches(verb, resource))
            .map(|(_, left, e)| {
                *left -= 1;
                e.clone()
            });
        rules.failures.retain(|(_, left, _)| *left > 0);
        (delay, failure)
    }

    /// Whether this watch should be answered with `410 Expired` (using up one).
    pub(crate) fn take_expired_watch(&self) -> bool {
        let mut rules = self.rules.lock();
        let expire = rules.expire_watches > 0;
        rules.expire_watches = rules.expire_watches.saturating_sub(1);
        expire
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_rule_fails_only_its_next_n_matching_requests() {
        let f = Faults::new();
        f.fail(
            RequestMatch::any().verb("create"),
            2,
            ApiError::internal("boom"),
        );
        assert!(f.take("get", "pods").1.is_none());
        assert!(f.take("create", "pods").1.is_some());
        assert!(f.take("create", "configmaps").1.is_some());
        assert!(f.take("create", "pods").1.is_none());
    }
}
