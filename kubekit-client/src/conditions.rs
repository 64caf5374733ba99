//! Status conditions (apimachinery's `api/meta` conditions helpers): set, find and remove
//! entries of a `status.conditions` list of
//! [`Condition`]s, with the semantics of `meta.SetStatusCondition` and friends.
//!
//! # Contract
//!
//! - [`set_status_condition`] adds the condition when none of its type is present, and
//!   otherwise updates the present one in place (its position in the list is kept).
//!   - `lastTransitionTime` changes **only when the status changes** (or the condition is
//!     new): it becomes the given condition's time, or *now* when that is unset (see
//!     [`is_unset`]). A condition set again with the same status keeps its time, whatever
//!     time the caller gave.
//!   - `reason`, `message` and `observedGeneration` are always taken from the given
//!     condition (pass the object's `metadata.generation` as `observed_generation`).
//!   - It returns whether anything changed, so a reconciler writes the status only when it
//!     must.
//! - [`remove_status_condition`] removes every condition of a type; [`find_status_condition`]
//!   finds the first of a type; the `is_status_condition_*` predicates compare its status.
//! - *now* is taken in whole seconds: the API server stores condition times to the second,
//!   so a condition read back from the server equals the one that was written.
//! - [`condition`] builds the condition to set with each field named
//!   (`condition("Ready").status(true).reason("Applied")`); [`new_condition`] makes the
//!   same with every field given in a row. [`set_status_condition`] takes either.
//!
//! ```
//! use kubekit::conditions::{self, condition};
//!
//! let mut list = Vec::new();
//! let ready = condition("Ready").status(true).reason("Applied").observed_generation(3);
//! assert!(conditions::set_status_condition(&mut list, ready.clone()));
//! assert!(!conditions::set_status_condition(&mut list, ready), "nothing changed");
//! assert!(conditions::is_status_condition_true(&list, "Ready"));
//! assert_eq!(conditions::find_status_condition(&list, "Ready").unwrap().observed_generation, Some(3));
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// The status of a condition that holds (`metav1.ConditionTrue`).
pub const CONDITION_TRUE: &str = "True";
/// The status of a condition that does not hold (`metav1.ConditionFalse`).
pub const CONDITION_FALSE: &str = "False";
/// The status of a condition that cannot be decided (`metav1.ConditionUnknown`).
pub const CONDITION_UNKNOWN: &str = "Unknown";

/// Go's zero `time.Time`, `0001-01-01T00:00:00Z`, in seconds from the Unix epoch.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// Whether `time` stands for "no time given" (Go's `Time.IsZero`): Go's zero time
/// (`0001-01-01T00:00:00Z`, what a Go client writes for an unset time) or the Unix epoch
/// (jiff's `Timestamp::default()`, what [`new_condition`] puts there).
pub fn is_unset(time: &Time) -> bool {
    time.0 == Timestamp::UNIX_EPOCH || time.0.as_second() == GO_ZERO_TIME_SECONDS
}

/// A condition of type `type_` with its `status` ([`CONDITION_TRUE`], [`CONDITION_FALSE`]
/// or [`CONDITION_UNKNOWN`]), `reason` (CamelCase, not empty on the server), `message` and
/// the generation it was computed from, its transition time unset, so that
/// [`set_status_condition`] stamps it when the status changes. [`condition`] builds the
/// same condition with each field named.
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        observed_generation,
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
    }
}

/// A condition of type `type_` to build field by field, for [`set_status_condition`]:
/// `condition("Ready").status(true).reason("Applied").message("…").observed_generation(g)`.
///
/// Until set, its status is [`CONDITION_UNKNOWN`], its reason and message are empty and it
/// has no `observedGeneration`. Its transition time is unset, as [`new_condition`] leaves
/// it, so that [`set_status_condition`] stamps it when the status changes. Give it a
/// reason: the API conventions ask for one, and the server refuses an empty one where it
/// validates conditions.
///
/// ```
/// use kubekit::conditions::{CONDITION_FALSE, condition, new_condition};
/// use kubekit::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
///
/// let generation: Option<i64> = Some(2); // an object's `metadata.generation`
/// let built: Condition = condition("Ready")
///     .status(false)
///     .reason("Scaling")
///     .message(format!("{} of {} available", 1, 3))
///     .observed_generation(generation)
///     .into();
/// let in_a_row = new_condition("Ready", CONDITION_FALSE, "Scaling", "1 of 3 available", Some(2));
/// assert_eq!(built, in_a_row);
/// ```
pub fn condition(type_: &str) -> ConditionBuilder {
    ConditionBuilder(new_condition(type_, CONDITION_UNKNOWN, "", "", None))
}

/// A [`Condition`] being built by [`condition`]; [`set_status_condition`] takes it as it
/// is, and `Condition::from` (or `.into()`) ends it.
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a condition does nothing until it is set: pass it to `set_status_condition`"]
pub struct ConditionBuilder(Condition);

impl ConditionBuilder {
    /// The status: [`CONDITION_TRUE`] when `holds`, [`CONDITION_FALSE`] otherwise.
    pub fn status(mut self, holds: bool) -> Self {
        let status = if holds {
            CONDITION_TRUE
        } else {
            CONDITION_FALSE
        };
        self.0.status = status.to_string();
        self
    }

    /// The status [`CONDITION_UNKNOWN`] (whether the condition holds cannot be decided),
    /// what it is until [`status`](Self::status) is set.
    pub fn unknown(mut self) -> Self {
        self.0.status = CONDITION_UNKNOWN.to_string();
        self
    }

    /// The reason: a CamelCase word for programs (`Applied`, `ApplyFailed`).
    pub fn reason(mut self, reason: &str) -> Self {
        self.0.reason = reason.to_string();
        self
    }

    /// The message: what happened, for humans.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.0.message = message.into();
        self
    }

    /// The `metadata.generation` of the object the condition was computed from: an `i64`,
    /// or the object's `Option<i64>` as it is (`None` leaves it unset).
    pub fn observed_generation(mut self, generation: impl Into<Option<i64>>) -> Self {
        self.0.observed_generation = generation.into();
        self
    }
}

impl From<ConditionBuilder> for Condition {
    fn from(builder: ConditionBuilder) -> Self {
        builder.0
    }
}

/// Now, in whole seconds (what the server keeps of a condition's time).
fn now() -> Time {
    let now = Timestamp::now();
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

/// `time`, or now when it is unset.
fn or_now(time: Time) -> Time {
    if is_unset(&time) { now() } else { time }
}

/// Sets `condition` (a [`Condition`], or a [`condition`] being built) in `conditions`
/// (`meta.SetStatusCondition`): see the [module docs](self). Returns whether `conditions`
/// changed.
pub fn set_status_condition(
    conditions: &mut Vec<Condition>,
    condition: impl Into<Condition>,
) -> bool {
    let condition: Condition = condition.into();
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == condition.type_) else {
        let last_transition_time = or_now(condition.last_transition_time.clone());
        conditions.push(Condition {
            last_transition_time,
            ..condition
        });
        return true;
    };
    let mut changed = false;
    if existing.status != condition.status {
        existing.status = condition.status;
        existing.last_transition_time = or_now(condition.last_transition_time);
        changed = true;
    }
    for (field, value) in [
        (&mut existing.reason, condition.reason),
        (&mut existing.message, condition.message),
    ] {
        if *field != value {
            *field = value;
            changed = true;
        }
    }
    if existing.observed_generation != condition.observed_generation {
        existing.observed_generation = condition.observed_generation;
        changed = true;
    }
    changed
}

/// Removes every condition of type `type_` (`meta.RemoveStatusCondition`). Returns whether
/// one was removed.
pub fn remove_status_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// The condition of type `type_`, if present (`meta.FindStatusCondition`).
pub fn find_status_condition<'a>(
    conditions: &'a [Condition],
    type_: &str,
) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of type `type_` is present with status `status`
/// (`meta.IsStatusConditionPresentAndEqual`).
pub fn is_status_condition_present_and_equal(
    conditions: &[Condition],
    type_: &str,
    status: &str,
) -> bool {
    find_status_condition(conditions, type_).is_some_and(|c| c.status == status)
}

/// Whether the condition of type `type_` is present and `True`
/// (`meta.IsStatusConditionTrue`).
pub fn is_status_condition_true(conditions: &[Condition], type_: &str) -> bool {
    is_status_condition_present_and_equal(conditions, type_, CONDITION_TRUE)
}

/// Whether the condition of type `type_` is present and `False`
/// (`meta.IsStatusConditionFalse`); an absent condition is neither true nor false.
pub fn is_status_condition_false(conditions: &[Condition], type_: &str) -> bool {
    is_status_condition_present_and_equal(conditions, type_, CONDITION_FALSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).unwrap())
    }

    fn condition(type_: &str, status: &str, time: Time) -> Condition {
        Condition {
            last_transition_time: time,
            ..new_condition(type_, status, "Reason", "message", Some(1))
        }
    }

    #[test]
    fn a_new_condition_is_appended_with_its_given_transition_time() {
        let mut list = vec![condition("Available", CONDITION_TRUE, at(100))];
        assert!(set_status_condition(
            &mut list,
            condition("Ready", CONDITION_FALSE, at(200))
        ));
        let types: Vec<_> = list.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Available", "Ready"]);
        assert_eq!(list[1].last_transition_time, at(200));
    }

    #[test]
    fn a_new_condition_without_a_transition_time_is_stamped_now_in_whole_seconds() {
        let before = Timestamp::now().as_second();
        let mut list = Vec::new();
        set_status_condition(
            &mut list,
            new_condition("Ready", CONDITION_TRUE, "R", "", None),
        );
        let stamped = &list[0].last_transition_time.0;
        assert!(stamped.as_second() >= before, "{stamped}");
        assert!(stamped.as_second() <= Timestamp::now().as_second());
        assert_eq!(stamped.subsec_nanosecond(), 0);
    }

    #[test]
    fn the_builder_gives_the_condition_new_condition_gives() {
        let built: Condition = super::condition("Ready")
            .status(true)
            .reason("Applied")
            .message(String::from("config applied"))
            .observed_generation(3)
            .into();
        let in_a_row = new_condition(
            "Ready",
            CONDITION_TRUE,
            "Applied",
            "config applied",
            Some(3),
        );
        assert_eq!(built, in_a_row);
        let failed = super::condition("Ready")
            .reason("ApplyFailed")
            .message("refused")
            .status(false)
            .observed_generation(None);
        let in_a_row = new_condition("Ready", CONDITION_FALSE, "ApplyFailed", "refused", None);
        assert_eq!(Condition::from(failed), in_a_row, "in any order");
        let unknown = super::condition("Ready")
            .status(true)
            .unknown()
            .reason("Probing");
        let in_a_row = new_condition("Ready", CONDITION_UNKNOWN, "Probing", "", None);
        assert_eq!(Condition::from(unknown), in_a_row);
    }

    #[test]
    fn a_built_condition_is_unknown_with_nothing_else_until_set() {
        let bare = Condition::from(super::condition("Ready"));
        assert_eq!(
            bare,
            new_condition("Ready", CONDITION_UNKNOWN, "", "", None)
        );
        assert!(is_unset(&bare.last_transition_time));
    }

    #[test]
    fn set_status_condition_stamps_a_built_condition_and_keeps_its_time_while_its_status_stays() {
        let before = Timestamp::now().as_second();
        let mut list = Vec::new();
        let ready = super::condition("Ready").status(true).reason("Applied");
        assert!(set_status_condition(&mut list, ready.clone()));
        let stamped = list[0].last_transition_time.clone();
        assert!(stamped.0.as_second() >= before, "{stamped:?}");
        assert!(stamped.0.as_second() <= Timestamp::now().as_second());
        assert_eq!(stamped.0.subsec_nanosecond(), 0);
        assert!(!set_status_condition(&mut list, ready), "nothing changed");
        let later = super::condition("Ready")
            .status(true)
            .reason("StillApplied");
        assert!(set_status_condition(&mut list, later));
        assert_eq!(list[0].last_transition_time, stamped);
    }

    #[test]
    fn go_zero_time_counts_as_unset() {
        let go_zero: Timestamp = "0001-01-01T00:00:00Z".parse().unwrap();
        assert!(is_unset(&Time(go_zero)));
        assert!(is_unset(&Time(Timestamp::UNIX_EPOCH)));
        assert!(!is_unset(&at(1)));
        let mut list = Vec::new();
        set_status_condition(&mut list, condition("Ready", CONDITION_TRUE, Time(go_zero)));
        assert!(!is_unset(&list[0].last_transition_time));
    }

    #[test]
    fn the_transition_time_stays_while_the_status_stays_even_if_another_time_is_given() {
        let mut list = vec![condition("Ready", CONDITION_TRUE, at(100))];
        let mut same = condition("Ready", CONDITION_TRUE, at(500));
        same.reason = "StillReady".into();
        assert!(set_status_condition(&mut list, same), "the reason changed");
        assert_eq!(list[0].last_transition_time, at(100));
        assert_eq!(list[0].reason, "StillReady");
    }

    #[test]
    fn a_status_change_takes_the_given_time_or_now() {
        let mut list = vec![condition("Ready", CONDITION_TRUE, at(100))];
        assert!(set_status_condition(
            &mut list,
            condition("Ready", CONDITION_FALSE, at(300))
        ));
        assert_eq!(
            (list[0].status.as_str(), &list[0].last_transition_time),
            (CONDITION_FALSE, &at(300))
        );
        let before = Timestamp::now().as_second();
        set_status_condition(
            &mut list,
            new_condition("Ready", CONDITION_TRUE, "Reason", "message", Some(1)),
        );
        assert!(list[0].last_transition_time.0.as_second() >= before);
    }

    #[test]
    fn reason_message_and_observed_generation_are_updated_and_reported_as_changes() {
        let base = condition("Ready", CONDITION_TRUE, at(100));
        let changes: [fn(&mut Condition); 3] = [
            |c| c.reason = "Other".into(),
            |c| c.message = "other".into(),
            |c| c.observed_generation = Some(2),
        ];
        for change in changes {
            let mut list = vec![base.clone()];
            let mut next = base.clone();
            change(&mut next);
            assert!(set_status_condition(&mut list, next.clone()));
            assert_eq!(list, [next], "taken as given, time unchanged");
        }
        let mut list = vec![base.clone()];
        assert!(
            !set_status_condition(&mut list, base.clone()),
            "the same condition changes nothing"
        );
        assert_eq!(list.len(), 1);
    }

    #[test]
    fn an_updated_condition_keeps_its_place_in_the_list() {
        let mut list = vec![
            condition("A", CONDITION_TRUE, at(1)),
            condition("B", CONDITION_TRUE, at(1)),
            condition("C", CONDITION_TRUE, at(1)),
        ];
        set_status_condition(&mut list, condition("B", CONDITION_FALSE, at(2)));
        let types: Vec<_> = list.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["A", "B", "C"]);
        assert_eq!(list[1].status, CONDITION_FALSE);
    }

    #[test]
    fn remove_drops_the_type_and_reports_whether_it_was_there() {
        let mut list = vec![
            condition("A", CONDITION_TRUE, at(1)),
            condition("B", CONDITION_TRUE, at(1)),
        ];
        assert!(remove_status_condition(&mut list, "A"));
        assert!(!remove_status_condition(&mut list, "A"));
        assert!(find_status_condition(&list, "A").is_none());
        assert_eq!(
            find_status_condition(&list, "B").map(|c| c.type_.as_str()),
            Some("B")
        );
        let mut empty = Vec::new();
        assert!(!remove_status_condition(&mut empty, "A"));
    }

    #[test]
    fn predicates_compare_the_status_of_a_present_condition_only() {
        let list = vec![
            condition("Ready", CONDITION_TRUE, at(1)),
            condition("Degraded", CONDITION_FALSE, at(1)),
            condition("Progressing", CONDITION_UNKNOWN, at(1)),
        ];
        assert!(is_status_condition_true(&list, "Ready"));
        assert!(!is_status_condition_false(&list, "Ready"));
        assert!(is_status_condition_false(&list, "Degraded"));
        assert!(!is_status_condition_true(&list, "Progressing"));
        assert!(!is_status_condition_false(&list, "Progressing"));
        assert!(is_status_condition_present_and_equal(
            &list,
            "Progressing",
            CONDITION_UNKNOWN
        ));
        assert!(!is_status_condition_true(&list, "Missing"));
        assert!(!is_status_condition_false(&list, "Missing"));
    }
}
