//! cel-go's sets extension (`ext.Sets()`, which the real server's environment includes):
//! `sets.contains(a, b)` (every element of `b` is in `a`), `sets.equivalent(a, b)` (each
//! contains the other) and `sets.intersects(a, b)` (an element in both), with CEL's
//! equality (`1 == 1.0`).

use cel::common::types::LIST_TYPE;
use cel::{DeclarationError, Env, ExecutionError, Value as Cel};

use super::{fail, overloads};

/// The functions [`register`] declares, as a program's references name them (without
/// their namespace).
pub(super) const FUNCTIONS: &[&str] = &["contains", "equivalent", "intersects"];

/// Declares the library's overloads on `env`.
pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    overloads!(env,
        global "sets.contains" "list_sets_contains_list" (LIST_TYPE, LIST_TYPE) => contains;
        global "sets.equivalent" "list_sets_equivalent_list" (LIST_TYPE, LIST_TYPE) => equivalent;
        global "sets.intersects" "list_sets_intersects_list" (LIST_TYPE, LIST_TYPE) => intersects;
    )
}

/// The two lists an overload was given.
fn lists(args: &[Cel]) -> Result<(&[Cel], &[Cel]), ExecutionError> {
    match args {
        [Cel::List(a), Cel::List(b)] => Ok((a, b)),
        _ => Err(fail("sets functions take two lists")),
    }
}

fn contains(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let (a, b) = lists(args)?;
    Ok(Cel::Bool(b.iter().all(|x| a.contains(x))))
}

fn equivalent(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let (a, b) = lists(args)?;
    Ok(Cel::Bool(
        b.iter().all(|x| a.contains(x)) && a.iter().all(|x| b.contains(x)),
    ))
}

fn intersects(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let (a, b) = lists(args)?;
    Ok(Cel::Bool(a.iter().any(|x| b.contains(x))))
}

#[cfg(test)]
mod tests {
    use crate::cel_rules::evaluate;

    #[test]
    fn sets_compare_lists_as_sets_with_cel_equality() {
        for (source, want) in [
            ("sets.contains([1, 2, 3], [3, 1])", true),
            ("sets.contains([1, 2], [3])", false),
            ("sets.contains([1], [])", true),
            ("sets.contains([1], [1.0])", true),
            ("sets.equivalent([1, 2, 2], [2, 1])", true),
            ("sets.equivalent([1, 2], [1])", false),
            ("sets.intersects(['a', 'b'], ['c', 'b'])", true),
            ("sets.intersects([], [1])", false),
        ] {
            assert_eq!(evaluate(source, &[]), Ok(want), "{source}");
        }
    }
}
