fn main() {
    runbook::cli::entry::main()
}
