//! A tiny program the end-to-end tests' exec steps call, so their side effects can be counted
//! without a shell: each action appends to a log, sleeps, prints or fails on demand.
//!
//!   stepper append FILE TEXT        append TEXT and a newline to FILE
//!   stepper sleep MILLIS            sleep
//!   stepper await FILE              wait until FILE exists (a test releases the step when it is ready)
//!   stepper require FILE            exit 1 unless FILE exists
//!   stepper print TEXT              print TEXT to stdout
//!   stepper env NAME                print the value of environment variable NAME
//!   stepper fail CODE               exit with CODE
//!   stepper pid FILE                append this process's id and a newline to FILE
//! Actions chain: `stepper append log a sleep 100 print done`.

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let arg = |n: usize| args.get(i + n).cloned().unwrap_or_else(|| panic!("`{}` needs an argument", args[i]));
        match args[i].as_str() {
            "append" => {
                let mut file = std::fs::OpenOptions::new().create(true).append(true).open(arg(1)).expect("open log");
                // One write call: concurrent steps appending to the same log never interleave.
                file.write_all(format!("{}\n", arg(2)).as_bytes()).expect("append");
                file.sync_all().expect("sync");
                i += 3;
            }
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_millis(arg(1).parse().expect("millis")));
                i += 2;
            }
            "await" => {
                let file = arg(1);
                while !std::path::Path::new(&file).exists() {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                i += 2;
            }
            "require" => {
                if !std::path::Path::new(&arg(1)).exists() {
                    eprintln!("required file {} is missing", arg(1));
                    std::process::exit(1);
                }
                i += 2;
            }
            "print" => {
                println!("{}", arg(1));
                i += 2;
            }
            "eprint" => {
                eprintln!("{}", arg(1));
                i += 2;
            }
            "env" => {
                println!("{}", std::env::var(arg(1)).unwrap_or_default());
                i += 2;
            }
            "pid" => {
                let mut file =
                    std::fs::OpenOptions::new().create(true).append(true).open(arg(1)).expect("open pid file");
                file.write_all(format!("{}\n", std::process::id()).as_bytes()).expect("append");
                file.sync_all().expect("sync");
                i += 2;
            }
            "fail" => std::process::exit(arg(1).parse().expect("code")),
            other => panic!("unknown action {other}"),
        }
    }
}
