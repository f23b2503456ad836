//! The process entry: parse, run on a tokio runtime, print errors, exit with the right code.
//! In the library so every binary built on it (the `runbook` CLI, the test harness's copy)
//! behaves the same.

use clap::Parser;

use crate::cli::{self, Cli, OutputFormat};

pub fn main() -> ! {
    #[cfg(feature = "sandbox")]
    runbook_standins::dispatch_by_name();
    let cli = Cli::parse();
    let json = cli.global.output == OutputFormat::Json;
    // Before the runtime's threads exist: they, and every program run, inherit the namespaces.
    #[cfg(feature = "sandbox")]
    if cli.wants_private_network()
        && let Err(error) = cli::namespace::enter()
    {
        if json {
            println!("{}", error.to_json());
        }
        eprint!("{}", error.render());
        std::process::exit(error.exit() as i32);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime starts");
    let exit = match runtime.block_on(cli::dispatch(cli)) {
        Ok(exit) => exit,
        Err(error) => {
            if json {
                println!("{}", error.to_json());
            }
            eprint!("{}", error.render());
            error.exit()
        }
    };
    // Leave without waiting for stray blocking tasks (e.g. a stdin reader of a killed program).
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    std::process::exit(exit as i32);
}
