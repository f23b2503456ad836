//! Local Azure for tests and rehearsals: in progress.
