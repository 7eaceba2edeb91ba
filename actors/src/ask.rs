//! Request/response to an actor with one error shape.

use std::time::Duration;

use ractor::rpc::CallResult;
use ractor::{ActorRef, Message, RpcReplyPort};

use crate::error::ActorError;

/// Sends the message `build` makes and waits for the answer (at most `timeout`). The
/// error says why there is none: the actor is gone, dropped the reply port, or was slow.
pub(crate) async fn ask<M: Message, T: Send + 'static>(
    actor: &ActorRef<M>,
    build: impl FnOnce(RpcReplyPort<T>) -> M,
    timeout: Option<Duration>,
) -> Result<T, ActorError> {
    match actor.call(build, timeout).await {
        Ok(CallResult::Success(answer)) => Ok(answer),
        Ok(CallResult::Timeout) => Err(ActorError::Timeout(timeout)),
        Ok(CallResult::SenderError) => Err(ActorError::Dropped),
        Err(err) => Err(ActorError::NotRunning(err.to_string())),
    }
}
