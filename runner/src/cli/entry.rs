//! The process entry: parse, run on a tokio runtime, print errors, exit with the right code.
//! In the library so every binary built on it (the `runbook` CLI, the test harness's copy)
//! behaves the same.

use clap::Parser;

use crate::cli::printer::Printer;
use crate::cli::{self, Cli};

pub fn main() -> ! {
    crate::cli::allocator::tune();
    #[cfg(feature = "sandbox")]
    runbook_standins::dispatch_by_name();
    let cli = Cli::parse();
    let printer = Printer::new(&cli.global);
    // Before the runtime's threads exist: they, and every program run, inherit the namespaces.
    #[cfg(feature = "sandbox")]
    if cli.wants_private_network()
        && let Err(error) = cli::namespace::enter()
    {
        printer.error(&error);
        std::process::exit(error.exit() as i32);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime starts");
    let exit = match runtime.block_on(cli::dispatch(cli)) {
        Ok(exit) => exit,
        Err(error) => {
            printer.error(&error);
            error.exit()
        }
    };
    // Leave without waiting for stray blocking tasks (e.g. a stdin reader of a killed program).
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    // A journal's last connection, closing on its writer's thread, copies the write-ahead log
    // into the database and removes it: waited for, so that the database file alone holds every
    // event once the command is over (a copy of it alone, say, is whole).
    runbook_journal::JournalWriter::wait_for_all_to_close(std::time::Duration::from_secs(10));
    std::process::exit(exit as i32);
}
