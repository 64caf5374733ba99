//! [`Predicate`]: which changes of a watched object reach a controller's work queue
//! (controller-runtime's `predicate` package).
//!
//! A predicate sees each change as a [`Change`] of object metadata and says whether it
//! passes. The built-in ones filter updates only (creations and deletions pass), as
//! controller-runtime's do; several filters on one controller must all pass, and
//! [`Predicate::or`] lets either of two pass.
//!
//! ```
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//! use kubekit::manager::{Change, Predicate};
//!
//! let spec_or_labels = Predicate::generation_changed().or(Predicate::labels_changed());
//! let old = ObjectMeta { generation: Some(1), ..Default::default() };
//! let status_only = ObjectMeta { generation: Some(1), resource_version: Some("9".into()), ..old.clone() };
//! assert!(!spec_or_labels.matches(&Change::Update { old: &old, new: &status_only }));
//! assert!(spec_or_labels.matches(&Change::Create(&old)));
//! ```

use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A change of a watched object, as a predicate sees it.
#[derive(Debug, Clone, Copy)]
pub enum Change<'a> {
    /// The object appeared in the cache (including the first list).
    Create(&'a ObjectMeta),
    /// The object changed (or a resync handed it again unchanged).
    Update {
        /// Its previous state.
        old: &'a ObjectMeta,
        /// Its new state.
        new: &'a ObjectMeta,
    },
    /// The object left the cache.
    Delete(&'a ObjectMeta),
}

type Check = dyn Fn(&Change<'_>) -> bool + Send + Sync;

/// A filter of changes; see the [module docs](self). Cheap to clone.
#[derive(Clone)]
pub struct Predicate(Arc<Check>);

impl fmt::Debug for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Predicate").finish_non_exhaustive()
    }
}

impl Predicate {
    /// A predicate deciding every change with `f`.
    pub fn new(f: impl Fn(&Change<'_>) -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// A predicate deciding updates with `f(old, new)`; creations and deletions pass.
    pub fn updates(f: impl Fn(&ObjectMeta, &ObjectMeta) -> bool + Send + Sync + 'static) -> Self {
        Self::new(move |change| match change {
            Change::Update { old, new } => f(old, new),
            Change::Create(_) | Change::Delete(_) => true,
        })
    }

    /// Updates pass when `metadata.generation` changed (the spec changed; status-only
    /// writes and resyncs are filtered out). controller-runtime's
    /// `GenerationChangedPredicate`.
    pub fn generation_changed() -> Self {
        Self::updates(|old, new| old.generation != new.generation)
    }

    /// Updates pass when the labels changed. controller-runtime's `LabelChangedPredicate`.
    pub fn labels_changed() -> Self {
        Self::updates(|old, new| old.labels != new.labels)
    }

    /// Updates pass when `metadata.resourceVersion` changed: every real change passes,
    /// resyncs do not. controller-runtime's `ResourceVersionChangedPredicate`.
    pub fn resource_version_changed() -> Self {
        Self::updates(|old, new| old.resource_version != new.resource_version)
    }

    /// A predicate that passes what either `self` or `other` passes.
    pub fn or(self, other: Predicate) -> Self {
        Self::new(move |change| self.matches(change) || other.matches(change))
    }

    /// Whether `change` passes.
    pub fn matches(&self, change: &Change<'_>) -> bool {
        (self.0)(change)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn meta(generation: i64, version: &str, label: &str) -> ObjectMeta {
        ObjectMeta {
            generation: Some(generation),
            resource_version: Some(version.into()),
            labels: Some(BTreeMap::from([("app".into(), label.into())])),
            ..Default::default()
        }
    }

    #[test]
    fn built_in_predicates_filter_updates_by_their_field_and_pass_creations_and_deletions() {
        let base = meta(1, "10", "a");
        let status_write = meta(1, "11", "a");
        let spec_change = meta(2, "12", "a");
        let relabel = meta(1, "13", "b");
        let update = |new| Change::Update { old: &base, new };
        let cases = [
            (Predicate::generation_changed(), [false, false, true, false]),
            (Predicate::labels_changed(), [false, false, false, true]),
            (
                Predicate::resource_version_changed(),
                [false, true, true, true],
            ),
        ];
        for (predicate, expected) in cases {
            let got = [&base, &status_write, &spec_change, &relabel]
                .map(|n| predicate.matches(&update(n)));
            assert_eq!(got, expected);
            assert!(predicate.matches(&Change::Create(&base)));
            assert!(predicate.matches(&Change::Delete(&base)));
        }
        let either = Predicate::generation_changed().or(Predicate::labels_changed());
        assert!(either.matches(&update(&relabel)) && either.matches(&update(&spec_change)));
        assert!(!either.matches(&update(&status_write)));
        let no_deletes = Predicate::new(|c| !matches!(c, Change::Delete(_)));
        assert!(!no_deletes.matches(&Change::Delete(&base)));
        assert!(no_deletes.matches(&update(&base)));
    }
}
