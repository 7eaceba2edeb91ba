//! Request/response to an actor with one error shape.

use std::time::Duration;

use ractor::rpc::CallResult;
use ractor::{ActorRef, Message, RpcReplyPort};

/// Sends the message `build` makes and waits for the answer (at most `timeout`). The
/// error says why there is none: the actor is gone, dropped the reply port, or was slow.
pub(crate) async fn ask<M: Message, T: Send + 'static>(
    actor: &ActorRef<M>,
    build: impl FnOnce(RpcReplyPort<T>) -> M,
    timeout: Option<Duration>,
) -> Result<T, String> {
    match actor.call(build, timeout).await {
        Ok(CallResult::Success(answer)) => Ok(answer),
        Ok(CallResult::Timeout) => Err(format!("no answer within {timeout:?}")),
        Ok(CallResult::SenderError) => Err("the actor dropped the request".into()),
        Err(err) => Err(format!("the actor is not running: {err}")),
    }
}
