//! Files written whole or not at all. Every writer in the workspace goes through [`write`]: the
//! bytes go to a temporary file with a unique name beside the target, are flushed to disk, get
//! their final mode, and only then take the target's name; the directory is flushed after. A
//! crash leaves either the old file or the new one, never half of one, and a 0600 file is
//! never readable by others, not even for a moment.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// What to do when the target already exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Existing {
    /// Replace it (atomically: readers see the old or the new content).
    Replace,
    /// Leave it and fail with [`io::ErrorKind::AlreadyExists`]: for files such as private keys
    /// that another process may have just written and that must never be silently replaced.
    Keep,
}

/// Mode of files that hold a secret.
pub const PRIVATE: u32 = 0o600;
/// Mode of every other file.
pub const PUBLIC: u32 = 0o644;

/// Writes `bytes` to `path` with `mode`, atomically; creates missing parent directories.
pub fn write(path: &Path, bytes: &[u8], mode: u32, existing: Existing) -> io::Result<()> {
    write_inner(path, bytes, mode, existing, true)
}

/// [`write`] without flushing anything to disk: a rename of a temporary file, no fsync. Readers
/// see the old content or the new, whole; after a power cut the target holds an earlier version
/// (or, on a filesystem that does not write a replacing file's data before its rename, as ext4
/// with `auto_da_alloc`, XFS and btrfs do, possibly an empty file). Only for a file rewritten
/// after every commit whose previous version is still acceptable: the journal's head record.
pub fn replace_unsynced(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    write_inner(path, bytes, mode, Existing::Replace, false)
}

fn write_inner(path: &Path, bytes: &[u8], mode: u32, existing: Existing, durable: bool) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("`{}` names no file", path.display())))?;
    // A random name per write keeps the temporary files of `x.json` and `x.yaml`, or of two
    // processes writing one target, apart. Created 0600 whatever the final mode: nothing can
    // read the bytes before the mode below is set.
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(PRIVATE))
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    // Set explicitly rather than at creation, where the umask would take bits away.
    temp.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
    if durable {
        temp.as_file().sync_all()?;
    }
    match existing {
        Existing::Replace => temp.persist(path).map_err(|e| e.error)?,
        Existing::Keep => temp.persist_noclobber(path).map_err(|e| e.error)?,
    };
    if durable { std::fs::File::open(dir)?.sync_all() } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn replaces_with_the_mode_asked_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/out/token.txt");
        write(&path, b"one", PUBLIC, Existing::Replace).unwrap();
        assert_eq!(mode(&path), PUBLIC);
        // An existing 0644 file that now receives a secret becomes 0600: the mode is the new
        // file's, not the old one's (an open with O_TRUNC would have kept 0644).
        write(&path, b"two", PRIVATE, Existing::Replace).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(mode(&path), PRIVATE);
        assert!(leftovers(path.parent().unwrap()).is_empty());
    }

    #[test]
    fn keep_never_replaces_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("signer.private");
        write(&path, b"first", PRIVATE, Existing::Keep).unwrap();
        let error = write(&path, b"second", PRIVATE, Existing::Keep).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"first");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn targets_differing_only_in_extension_use_distinct_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("x.json");
        let yaml = dir.path().join("x.yaml");
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| write(&json, b"{\"a\": 1}", PUBLIC, Existing::Replace).unwrap());
                s.spawn(|| write(&yaml, b"a: 1", PUBLIC, Existing::Replace).unwrap());
            }
        });
        assert_eq!(std::fs::read(&json).unwrap(), b"{\"a\": 1}");
        assert_eq!(std::fs::read(&yaml).unwrap(), b"a: 1");
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let error = write(Path::new("/"), b"x", PUBLIC, Existing::Replace).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }
}
