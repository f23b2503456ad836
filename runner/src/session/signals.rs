//! One signal policy for a run: the session owns it, so every command that runs steps stops the
//! same way on Ctrl-C, SIGTERM and SIGHUP.

use tokio_util::sync::CancellationToken;

use crate::exit::{CliError, CliResult, Exit};

/// How long running steps get to finish after a SIGTERM before their process groups are killed:
/// whoever sends SIGTERM (a service manager, a CI runner) follows with SIGKILL after about 10 s,
/// and by then the runner must have killed its programs and recorded where the run stands.
const SIGTERM_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// First Ctrl-C or SIGTERM (or SIGHUP): stop starting steps. After a Ctrl-C running steps may finish (the
/// operator is there to press it again); after a SIGTERM they get [`SIGTERM_GRACE`]. Then, or at
/// a second signal of either kind, their process groups are killed and the run is recorded as
/// cancelled. The process exits shortly after even if something hangs.
pub(crate) fn spawn_signal_handler(
    graceful: CancellationToken,
    hard: CancellationToken,
) -> CliResult<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    // Registered before the run starts, so no signal can arrive before its handler is there.
    let listen =
        |kind: SignalKind| signal(kind).map_err(|e| CliError::Internal(anyhow::anyhow!("cannot handle signals: {e}")));
    let mut interrupt = listen(SignalKind::interrupt())?;
    let mut terminate = listen(SignalKind::terminate())?;
    // The terminal or session going away: nobody is there to press Ctrl-C again, as with SIGTERM.
    let mut hangup = listen(SignalKind::hangup())?;
    Ok(tokio::spawn(async move {
        let terminated = tokio::select! {
            Some(()) = interrupt.recv() => false,
            Some(()) = terminate.recv() => true,
            Some(()) = hangup.recv() => true,
            else => return,
        };
        graceful.cancel();
        // The grace is a deadline on the run's clock, as a step's timeout is: on a simulated
        // clock it ends when that clock is moved past it or its real time has passed, never
        // sooner, so running steps get the time it names.
        let clock = runbook_clock::Clock::process();
        let deadline = clock.now() + SIGTERM_GRACE;
        let grace = async { if terminated { clock.until(deadline).await } else { std::future::pending().await } };
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
            () = grace => {}
        }
        hard.cancel();
        // Real time: a guard against this process hanging on the machine, not a time of the run
        // (a simulated clock would skip it and exit before the cancelled steps are recorded).
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        std::process::exit(Exit::Cancelled as i32);
    }))
}
