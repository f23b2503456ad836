//! Hand-off files: one person's checkpoint values and files, carried to another person's
//! journal. The file format, its signature, the encryption of its secrets, reading what a
//! journal published, and when a newer hand-off replaces an earlier one's values are each in
//! their own module; `export` and `import` are what the commands (and rehearsals) call.

pub mod declared;
pub mod export;
pub mod format;
pub mod import;
pub mod link;
pub mod published;
pub mod sealing;
pub mod signing;
pub mod supersede;
