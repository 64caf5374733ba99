//! Kubernetes' lists library (`lists.go`, at the version kube-apiserver 1.37 compiles new
//! expressions with: its compatibility version, 1.36, before `includes`), as member
//! functions of lists:
//!
//! - `isSorted()`: no element above the next; `min()` and `max()`: the first smallest or
//!   largest element, an error (`min called on empty list`) on an empty list. Of ints,
//!   uints, doubles, bools, strings, bytes, durations and timestamps.
//! - `sum()`: of ints, uints, doubles or durations, checked for overflow (`integer
//!   overflow`, `unsigned integer overflow`); `0` for an empty list.
//! - `indexOf(x)` and `lastIndexOf(x)`: the first or last index of an element equal to
//!   `x` (CEL's equality: `1 == 1.0`), or -1.
//!
//! There is no type checker: as cel-go does at runtime for a list whose element type it
//! does not know, the first element picks the overload (`no such overload: sum(list)` if
//! none takes it), and an element of another type fails with `no such overload` where
//! the overload needs it (a sum, an element not ordered at all) and is passed over where
//! cel-go's comparison fails (an int and a string in `isSorted`, `NaN`).
//!
//! Not done: the sum of an empty list is the int `0` whatever the list's declared
//! element type (cel-go gives `0.0` for an empty `list(double)`, and so on): values carry
//! no element type here.

use std::cmp::Ordering;

use cel::common::types::{DYN_TYPE, LIST_TYPE};
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

use super::{fail, overloads};

/// The functions [`register`] declares, as a program's references name them.
pub(super) const FUNCTIONS: &[&str] = &["isSorted", "sum", "min", "max", "indexOf", "lastIndexOf"];

/// Declares the library's overloads on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    overloads!(env,
        member "isSorted" "list_is_sorted_bool" (LIST_TYPE) => is_sorted;
        member "sum" "list_sum" (LIST_TYPE) => sum;
        member "min" "list_min" (LIST_TYPE) => min;
        member "max" "list_max" (LIST_TYPE) => max;
        member "indexOf" "list_a_index_of_int" (LIST_TYPE, DYN_TYPE) => index_of;
        member "lastIndexOf" "list_a_last_index_of_int" (LIST_TYPE, DYN_TYPE) => last_index_of;
    )
}

/// The receiver of a list function.
fn list(args: &[Cel]) -> Result<&[Cel], ExecutionError> {
    match args.first() {
        Some(Cel::List(items)) => Ok(items),
        other => Err(fail(format!("expected a list, got {other:?}"))),
    }
}

/// cel-go's failure to pick an overload of `function` for a list at runtime.
fn no_overload(function: &str) -> ExecutionError {
    fail(format!("no such overload: {function}(list)"))
}

/// cel-go's failure of an operation on a value of a type it does not take.
fn no_such_overload() -> ExecutionError {
    fail("no such overload")
}

/// Whether cel-go orders values of `value`'s type (its `traits.Comparer`s).
fn ordered(value: &Cel) -> bool {
    matches!(
        value,
        Cel::Int(_)
            | Cel::UInt(_)
            | Cel::Float(_)
            | Cel::Bool(_)
            | Cel::String(_)
            | Cel::Bytes(_)
            | Cel::Duration(_)
            | Cel::Timestamp(_)
    )
}

/// The list of an ordering function (`isSorted`, `min`, `max`), whose first element, if
/// any, picks one of its overloads.
fn ordered_list<'a>(args: &'a [Cel], function: &str) -> Result<&'a [Cel], ExecutionError> {
    let items = list(args)?;
    match items.first() {
        Some(first) if !ordered(first) => Err(no_overload(function)),
        _ => Ok(items),
    }
}

/// cel-go's `a.Compare(b)`: `None` where it fails (values of types it does not compare,
/// `NaN`), numbers compared across types.
fn compare(a: &Cel, b: &Cel) -> Option<Ordering> {
    match (a, b) {
        (Cel::Int(a), Cel::Int(b)) => Some(a.cmp(b)),
        (Cel::UInt(a), Cel::UInt(b)) => Some(a.cmp(b)),
        (Cel::Float(a), Cel::Float(b)) => a.partial_cmp(b),
        (Cel::Int(i), Cel::UInt(u)) => Some(int_uint(*i, *u)),
        (Cel::UInt(u), Cel::Int(i)) => Some(int_uint(*i, *u).reverse()),
        (Cel::Float(d), Cel::Int(i)) => double_int(*d, *i),
        (Cel::Int(i), Cel::Float(d)) => double_int(*d, *i).map(Ordering::reverse),
        (Cel::Float(d), Cel::UInt(u)) => double_uint(*d, *u),
        (Cel::UInt(u), Cel::Float(d)) => double_uint(*d, *u).map(Ordering::reverse),
        (Cel::Bool(a), Cel::Bool(b)) => Some(a.cmp(b)),
        (Cel::String(a), Cel::String(b)) => Some(a.cmp(b)),
        (Cel::Bytes(a), Cel::Bytes(b)) => Some(a.cmp(b)),
        (Cel::Duration(a), Cel::Duration(b)) => Some(a.cmp(b)),
        (Cel::Timestamp(a), Cel::Timestamp(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

/// cel-go's `compareIntUint`.
fn int_uint(i: i64, u: u64) -> Ordering {
    match u64::try_from(i) {
        Ok(i) => i.cmp(&u),
        Err(_) => Ordering::Less,
    }
}

/// cel-go's `compareDoubleInt` (`None` for `NaN`).
fn double_int(d: f64, i: i64) -> Option<Ordering> {
    if d < i64::MIN as f64 {
        Some(Ordering::Less)
    } else if d > i64::MAX as f64 {
        Some(Ordering::Greater)
    } else {
        d.partial_cmp(&(i as f64))
    }
}

/// cel-go's `compareDoubleUint` (`None` for `NaN`).
fn double_uint(d: f64, u: u64) -> Option<Ordering> {
    if d < 0.0 {
        Some(Ordering::Less)
    } else if d > u64::MAX as f64 {
        Some(Ordering::Greater)
    } else {
        d.partial_cmp(&(u as f64))
    }
}

fn is_sorted(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let items = ordered_list(args, "isSorted")?;
    let mut previous: Option<&Cel> = None;
    for item in items {
        if !ordered(item) {
            return Err(no_such_overload());
        }
        if previous.is_some_and(|p| compare(p, item) == Some(Ordering::Greater)) {
            return Ok(Cel::Bool(false));
        }
        previous = Some(item);
    }
    Ok(Cel::Bool(true))
}

fn min(args: &[Cel]) -> Result<Cel, ExecutionError> {
    extreme(args, "min", Ordering::Greater)
}

fn max(args: &[Cel]) -> Result<Cel, ExecutionError> {
    extreme(args, "max", Ordering::Less)
}

/// The first element of the list of `function` the others do not replace; one replaces
/// the one kept when the kept one compares to it as `replaced`.
fn extreme(args: &[Cel], function: &str, replaced: Ordering) -> Result<Cel, ExecutionError> {
    let items = ordered_list(args, function)?;
    let Some((first, rest)) = items.split_first() else {
        return Err(fail(format!("{function} called on empty list")));
    };
    let mut kept = first;
    for item in rest {
        if !ordered(item) {
            return Err(no_such_overload());
        }
        if compare(kept, item) == Some(replaced) {
            kept = item;
        }
    }
    Ok(kept.clone())
}

fn sum(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let items = list(args)?;
    let mut total = match items.first() {
        None | Some(Cel::Int(_)) => Cel::Int(0),
        Some(Cel::UInt(_)) => Cel::UInt(0),
        Some(Cel::Float(_)) => Cel::Float(0.0),
        Some(Cel::Duration(_)) => Cel::Duration(chrono::Duration::zero()),
        Some(_) => return Err(no_overload("sum")),
    };
    for item in items {
        total = add(&total, item)?;
    }
    Ok(total)
}

/// cel-go's `a.Add(b)` of the values a sum adds.
fn add(a: &Cel, b: &Cel) -> Result<Cel, ExecutionError> {
    let overflow = || fail("integer overflow");
    Ok(match (a, b) {
        (Cel::Int(a), Cel::Int(b)) => Cel::Int(a.checked_add(*b).ok_or_else(overflow)?),
        (Cel::UInt(a), Cel::UInt(b)) => Cel::UInt(
            a.checked_add(*b)
                .ok_or_else(|| fail("unsigned integer overflow"))?,
        ),
        (Cel::Float(a), Cel::Float(b)) => Cel::Float(a + b),
        // Go's durations are nanoseconds in an int64.
        (Cel::Duration(a), Cel::Duration(b)) => {
            let nanos = a
                .num_nanoseconds()
                .zip(b.num_nanoseconds())
                .and_then(|(a, b)| a.checked_add(b))
                .ok_or_else(overflow)?;
            Cel::Duration(chrono::Duration::nanoseconds(nanos))
        }
        (Cel::Duration(d), Cel::Timestamp(t)) | (Cel::Timestamp(t), Cel::Duration(d)) => {
            Cel::Timestamp(
                t.checked_add_signed(*d)
                    .ok_or_else(|| fail("timestamp overflow"))?,
            )
        }
        _ => return Err(no_such_overload()),
    })
}

/// The receiver and the element looked for.
fn list_and_item(args: &[Cel]) -> Result<(&[Cel], &Cel), ExecutionError> {
    match args.get(1) {
        Some(item) => Ok((list(args)?, item)),
        None => Err(fail("expected an element to look for")),
    }
}

/// An index as an int.
fn index(at: Option<usize>) -> Cel {
    Cel::Int(at.and_then(|i| i64::try_from(i).ok()).unwrap_or(-1))
}

fn index_of(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let (items, item) = list_and_item(args)?;
    Ok(index(items.iter().position(|x| x == item)))
}

fn last_index_of(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let (items, item) = list_and_item(args)?;
    Ok(index(items.iter().rposition(|x| x == item)))
}

#[cfg(test)]
mod tests {
    //! Every expectation here is what cel-go v0.29.2 with k8s.io/apiserver v0.37.2's
    //! `library.Lists(library.ListsVersion(1))` evaluates the same expression to. Lists
    //! of values of several types are written `[dyn(1), dyn('a')]` there, as cel-go's
    //! checker refuses mixed list literals.

    use serde_json::json;

    use crate::cel_rules::evaluate_value;

    fn check_all(cases: &[(&str, serde_json::Value)]) {
        for (source, want) in cases {
            assert_eq!(evaluate_value(source, &[]), Ok(want.clone()), "{source}");
        }
    }

    fn fails_with(source: &str, text: &str) {
        assert_eq!(
            evaluate_value(source, &[]),
            Err(text.to_string()),
            "{source}"
        );
    }

    #[test]
    fn is_sorted_orders_each_comparable_type() {
        check_all(&[
            ("[1, 2, 3].isSorted()", json!(true)),
            ("[1, 3, 2].isSorted()", json!(false)),
            ("['a', 'b', 'b', 'c'].isSorted()", json!(true)),
            ("['b', 'a'].isSorted()", json!(false)),
            ("[2.0, 1.0].isSorted()", json!(false)),
            ("[1.0, 2.5].isSorted()", json!(true)),
            ("[1u, 2u].isSorted()", json!(true)),
            ("[false, true].isSorted()", json!(true)),
            ("[true, false].isSorted()", json!(false)),
            ("[b'a', b'b'].isSorted()", json!(true)),
            ("[b'b', b'a'].isSorted()", json!(false)),
            ("[duration('1s'), duration('1m')].isSorted()", json!(true)),
            ("[duration('1m'), duration('1s')].isSorted()", json!(false)),
            (
                "[timestamp('2020-01-01T00:00:00Z'), timestamp('2021-01-01T00:00:00Z')].isSorted()",
                json!(true),
            ),
            (
                "[timestamp('2022-01-01T00:00:00Z'), timestamp('2021-01-01T00:00:00Z')].isSorted()",
                json!(false),
            ),
            ("[1].isSorted()", json!(true)),
            ("[].isSorted()", json!(true)),
        ]);
    }

    #[test]
    fn is_sorted_compares_numbers_across_types_and_passes_over_other_types() {
        check_all(&[
            ("[1, 1.5, 2u].isSorted()", json!(true)),
            ("[2, 1.5].isSorted()", json!(false)),
            ("[3u, 2].isSorted()", json!(false)),
            ("[2u, 1.5].isSorted()", json!(false)),
            ("[1, 1.0].isSorted()", json!(true)),
            ("[1e19, 9223372036854775807].isSorted()", json!(false)),
            (
                "[9223372036854775807u, 9223372036854775806].isSorted()",
                json!(false),
            ),
            (
                "[9223372036854775807, 9223372036854775807u].isSorted()",
                json!(true),
            ),
            // cel-go's comparison fails, which isSorted does not count.
            ("[1, 'a', 0].isSorted()", json!(true)),
            ("['a', 1].isSorted()", json!(true)),
            ("[true, 1].isSorted()", json!(true)),
            ("[1.0, double('NaN'), 0.0].isSorted()", json!(true)),
        ]);
    }

    #[test]
    fn is_sorted_of_unordered_elements_is_no_such_overload() {
        fails_with("[[1], [2]].isSorted()", "no such overload: isSorted(list)");
        fails_with("[null].isSorted()", "no such overload: isSorted(list)");
        fails_with("[{'a': 1}].isSorted()", "no such overload: isSorted(list)");
        fails_with("[1, null].isSorted()", "no such overload");
        fails_with("[1, [1]].isSorted()", "no such overload");
    }

    #[test]
    fn sum_adds_ints_uints_doubles_and_durations() {
        check_all(&[
            ("[1, 3].sum()", json!(4)),
            ("[1.0, 3.0].sum() == 4.0", json!(true)),
            ("[1.5, 2.5].sum()", json!(4.0)),
            ("[1u, 3u].sum() == 4u", json!(true)),
            (
                "[duration('1m'), duration('1s')].sum() == duration('1m1s')",
                json!(true),
            ),
            (
                "[duration('290000h'), duration('290000h')].sum() == duration('580000h')",
                json!(true),
            ),
            ("[].sum()", json!(0)),
            (
                "[1.7976931348623157e308, 1.7976931348623157e308].sum() == double('Infinity')",
                json!(true),
            ),
            ("['a', 'b'].map(s, size(s)).sum()", json!(2)),
        ]);
    }

    #[test]
    fn sum_overflow_and_mixed_types_fail_as_cel_go() {
        fails_with("[9223372036854775807, 1].sum()", "integer overflow");
        fails_with("[-9223372036854775807, -2].sum()", "integer overflow");
        fails_with(
            "[18446744073709551615u, 1u].sum()",
            "unsigned integer overflow",
        );
        fails_with("[1, 2u].sum()", "no such overload");
        fails_with("[1, 2.5].sum()", "no such overload");
        fails_with("[1.5, 2].sum()", "no such overload");
        fails_with("[1, 'a'].sum()", "no such overload");
        fails_with("[duration('1s'), 1].sum()", "no such overload");
        fails_with("['a', 'b'].sum()", "no such overload: sum(list)");
        fails_with("[null].sum()", "no such overload: sum(list)");
        fails_with("[true].sum()", "no such overload: sum(list)");
        fails_with("[b'a'].sum()", "no such overload: sum(list)");
        fails_with(
            "[timestamp('2020-01-01T00:00:00Z')].sum()",
            "no such overload: sum(list)",
        );
    }

    #[test]
    fn min_and_max_pick_the_first_extreme_element() {
        check_all(&[
            ("[1, 3].min()", json!(1)),
            ("[1, 3].max()", json!(3)),
            ("[3, 1, 2].min()", json!(1)),
            ("[3, 1, 2].max()", json!(3)),
            ("[1].min()", json!(1)),
            ("([0] + []).min()", json!(0)),
            ("[2.5, -1.0].min()", json!(-1.0)),
            ("['b', 'a', 'c'].max()", json!("c")),
            ("['b', 'a', 'c'].min()", json!("a")),
            ("[b'b', b'a'].min() == b'a'", json!(true)),
            ("[true, false].min()", json!(false)),
            ("[true, false].max()", json!(true)),
            ("[1u, 5u].max()", json!(5)),
            (
                "[duration('1s'), duration('1m')].max() == duration('1m')",
                json!(true),
            ),
            (
                "[duration('1s'), duration('-1s')].min() == duration('-1s')",
                json!(true),
            ),
            (
                "[timestamp('2022-01-01T00:00:00Z'), timestamp('2021-01-01T00:00:00Z')].min()",
                json!("2021-01-01T00:00:00Z"),
            ),
            // Across types: numbers compare, others are passed over; ties keep the first.
            ("[1, 2.5].max()", json!(2.5)),
            ("[3, 2.5].min()", json!(2.5)),
            ("[2, 2.5, 1u].min() == 1u", json!(true)),
            (
                "[-1, 18446744073709551615u].max() == 18446744073709551615u",
                json!(true),
            ),
            ("[1, 'a'].max()", json!(1)),
            ("['a', 1].min()", json!("a")),
            ("type([1, 1.0].min()) == int", json!(true)),
            ("type([1.0, 1].min()) == double", json!(true)),
            ("[1, double('NaN')].max()", json!(1)),
            ("[1.0, double('NaN')].max()", json!(1.0)),
            ("[[double('NaN'), 1.0].max()].all(x, x != x)", json!(true)),
        ]);
    }

    #[test]
    fn min_and_max_of_an_empty_list_fail() {
        fails_with("[].min()", "min called on empty list");
        fails_with("[].max()", "max called on empty list");
        fails_with("[[1]].min()", "no such overload: min(list)");
        fails_with("[null, 1].max()", "no such overload: max(list)");
        fails_with("[1, null].max()", "no such overload");
    }

    #[test]
    fn index_of_and_last_index_of_find_equal_elements() {
        check_all(&[
            ("[1, 2, 2, 3].indexOf(2)", json!(1)),
            ("[1, 2, 2, 3].lastIndexOf(2)", json!(2)),
            ("['a', 'b', 'b', 'c'].lastIndexOf('b')", json!(2)),
            ("[1, 2].lastIndexOf(5)", json!(-1)),
            ("[1.0].indexOf(1.1)", json!(-1)),
            ("[].indexOf('string')", json!(-1)),
            ("[1, 2].indexOf(2.0)", json!(1)),
            ("[1, 2].indexOf(2u)", json!(1)),
            ("[1u, 2].lastIndexOf(-1)", json!(-1)),
            ("['1'].indexOf(1)", json!(-1)),
            ("[b'a'].indexOf('a')", json!(-1)),
            ("[[1], [2]].indexOf([2])", json!(1)),
            ("[1, {'a': [1]}].indexOf({'a': [1.0]})", json!(1)),
            ("[1, null].indexOf(null)", json!(1)),
            ("[double('NaN')].indexOf(double('NaN'))", json!(-1)),
            ("[duration('60s')].indexOf(duration('1m'))", json!(0)),
            (
                "[timestamp('2020-01-01T01:00:00+01:00')].indexOf(timestamp('2020-01-01T00:00:00Z'))",
                json!(0),
            ),
            (
                "[semver('1.0.0'), semver('1.0.0+b')].lastIndexOf(semver('1.0.0'))",
                json!(1),
            ),
            ("[semver('1.0.0')].indexOf('1.0.0')", json!(-1)),
            (
                "'abcb'.indexOf('b') == 1 && 'abcb'.lastIndexOf('b') == 3",
                json!(true),
            ),
        ]);
    }
}
