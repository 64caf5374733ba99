//! tokio's spawns with the task's type erased behind a box.
//!
//! Code generic over a resource type (an informer's reflector, a typed client's list and
//! watch decoding) that spawned its future or closure as it is would compile tokio's task
//! machinery (harness, cell, join handle, blocking task) once per type: the informer
//! factory names some 85 types, so unboxed that machinery was about 7 % of the library's
//! LLVM IR (`cargo llvm-lines --release -p kubekit --lib`, run 2026-11-28). Boxed, it is
//! compiled once; the box costs one allocation per spawn.

use std::any::Any;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures_util::future::BoxFuture;
use tokio::runtime::Handle;
use tokio::task::{JoinError, JoinHandle};

/// [`tokio::spawn`] of `future`, boxed.
pub fn spawn(future: impl Future<Output = ()> + Send + 'static) -> JoinHandle<()> {
    let boxed: BoxFuture<'static, ()> = Box::pin(future);
    tokio::spawn(boxed)
}

/// What a closure run on the blocking pool gives back, erased.
type Erased = Box<dyn Any + Send>;

/// The output of [`spawn_blocking`]: its closure's result, or why it has none (it
/// panicked, or the runtime shut down first).
pub struct Blocking<R> {
    handle: JoinHandle<Erased>,
    output: PhantomData<fn() -> R>,
}

/// [`Handle::spawn_blocking`] of `f` on `runtime`, boxed.
pub fn spawn_blocking<R: Send + 'static>(
    runtime: &Handle,
    f: impl FnOnce() -> R + Send + 'static,
) -> Blocking<R> {
    let boxed: Box<dyn FnOnce() -> Erased + Send> = Box::new(move || Box::new(f()));
    Blocking {
        handle: runtime.spawn_blocking(boxed),
        output: PhantomData,
    }
}

impl<R: 'static> Future for Blocking<R> {
    type Output = Result<R, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let joined = ready!(Pin::new(&mut self.handle).poll(cx));
        Poll::Ready(joined.map(|erased| match erased.downcast::<R>() {
            Ok(output) => *output,
            Err(_) => unreachable!("a blocking task of `spawn_blocking` returns its `R`"),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_spawned_future_runs_to_completion() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        spawn(async move {
            let _ = tx.send(7);
        })
        .await
        .unwrap();
        assert_eq!(rx.await.unwrap(), 7);
    }

    #[tokio::test]
    async fn a_blocking_closure_gives_back_its_result_and_its_panic_as_an_error() {
        let runtime = Handle::current();
        let sum = spawn_blocking(&runtime, || (1..=10).sum::<u32>()).await;
        assert_eq!(sum.unwrap(), 55);
        let items = spawn_blocking(&runtime, || vec![String::from("a"), "b".into()]).await;
        assert_eq!(items.unwrap(), ["a", "b"]);
        let panicked = spawn_blocking(&runtime, || -> u32 { panic!("decoding failed") }).await;
        assert!(panicked.unwrap_err().is_panic());
    }
}
