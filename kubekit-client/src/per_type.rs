//! State kept per Rust type for the life of the process ([`per_type`]): how a type's
//! objects' metadata is read ([`meta_ref`](crate::meta_ref)), and a compact type's
//! compression and decoded objects.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::LazyLock;

use parking_lot::RwLock;

type AnyState = &'static (dyn Any + Send + Sync);

/// The state `S` that every value of type `T` shares (one per pair of types, made on first
/// use and kept for the life of the process). Looked up in a per-thread copy of the
/// process's table: this is on the path of every object decoded, on every core.
pub(crate) fn per_type<T: 'static, S: Default + Send + Sync + 'static>() -> &'static S {
    let state = state_of((TypeId::of::<T>(), TypeId::of::<S>()), new_state::<S>);
    match state.downcast_ref() {
        Some(state) => state,
        // The key names S: a state of another type is never stored under it.
        None => unreachable!("per-type state stored under another type"),
    }
}

/// A new state of type `S`, kept for the life of the process.
fn new_state<S: Default + Send + Sync + 'static>() -> AnyState {
    Box::leak(Box::new(S::default()))
}

/// The state under `key`, made by `make` on first use: [`per_type`]'s table, not generic
/// so that it is compiled once rather than for every type.
fn state_of(key: (TypeId, TypeId), make: fn() -> AnyState) -> AnyState {
    static STATES: LazyLock<RwLock<HashMap<(TypeId, TypeId), AnyState>>> =
        LazyLock::new(Default::default);
    thread_local! {
        static LOCAL: RefCell<Vec<((TypeId, TypeId), AnyState)>> = const { RefCell::new(Vec::new()) };
    }
    LOCAL.with_borrow_mut(|local| {
        if let Some((_, state)) = local.iter().find(|(k, _)| *k == key) {
            return *state;
        }
        let known = STATES.read().get(&key).copied();
        let state = known.unwrap_or_else(|| *STATES.write().entry(key).or_insert_with(make));
        local.push((key, state));
        state
    })
}
