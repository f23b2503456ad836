//! Reading the files a runbook comes from (the runbook, a vars file, `from_file` values,
//! templates): regular files only, so a FIFO cannot block and `/dev/zero` cannot exhaust memory;
//! at most [`MAX_INPUT_BYTES`]; UTF-8, with the place of the first bad byte when it is not.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::model::diagnostics::Problem;
use crate::model::source::SourceFile;

/// Far above any runbook, vars file or template (the bundled Phase 1 runbook is about 30 KiB).
pub const MAX_INPUT_BYTES: u64 = 4 * 1024 * 1024;

/// The text of `path`, read as `what` ("runbook", "vars file", …); every refusal names the file.
pub fn read_text(path: &Path, what: &str) -> Result<String, Problem> {
    let bytes = read_bytes(path, what, MAX_INPUT_BYTES)?;
    decode(path, bytes, what)
}

/// A small text file given on the command line (a key, a list of keys), as [`read_text`] reads
/// it; the refusal as one line for callers that report plain text.
pub fn read_small_text(path: &Path, what: &str) -> Result<String, String> {
    read_text(path, what).map_err(|p| match p.hint {
        Some(hint) => format!("{}: {} ({hint})", p.file, p.message),
        None => format!("{}: {}", p.file, p.message),
    })
}

/// The bytes of `path`, read as `what`: a regular file (a FIFO would block, a device never end)
/// of at most `limit` bytes; every refusal names the file.
pub fn read_bytes(path: &Path, what: &str, limit: u64) -> Result<Vec<u8>, Problem> {
    let shown = path.display().to_string();
    let refuse = |message: String, hint: &str| Problem::without_file(&shown, message).with_hint(hint);
    let metadata = std::fs::metadata(path).map_err(|e| refuse(format!("cannot read {what}: {e}"), "check the path"))?;
    if !metadata.is_file() {
        return Err(refuse(
            format!("cannot read {what}: it is {}, not a regular file", file_type(&metadata)),
            "give the path of a file",
        ));
    }
    if metadata.len() > limit {
        return Err(refuse(
            format!("cannot read {what}: it is {} bytes, more than the {limit} a {what} may have", metadata.len()),
            "is this the right file?",
        ));
    }
    // Non-blocking, so a file swapped for a FIFO after the check above still cannot block.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| refuse(format!("cannot read {what}: {e}"), "check the path and its permissions"))?;
    let opened = file.metadata().map_err(|e| refuse(format!("cannot read {what}: {e}"), "check the path"))?;
    if !opened.is_file() {
        return Err(refuse(format!("cannot read {what}: it is not a regular file"), "give the path of a file"));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(format!("cannot read {what}: {e}"), "check the file"))?;
    if bytes.len() as u64 > limit {
        return Err(refuse(
            format!("cannot read {what}: it grew past {limit} bytes while read"),
            "is this the right file?",
        ));
    }
    Ok(bytes)
}

/// UTF-8 text, or a problem at the first byte that is not (UTF-16 is named as such).
pub fn decode(path: &Path, bytes: Vec<u8>, what: &str) -> Result<String, Problem> {
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        // Pointed at its first character (the byte order mark), shown as the text it holds.
        let little_endian = bytes[0] == 0xFF;
        let units: Vec<u16> = bytes[2..]
            .chunks_exact(2)
            .map(|pair| {
                if little_endian {
                    u16::from_le_bytes([pair[0], pair[1]])
                } else {
                    u16::from_be_bytes([pair[0], pair[1]])
                }
            })
            .collect();
        let file = SourceFile::new(path, String::from_utf16_lossy(&units));
        return Err(Problem::new(&file, 0..0, format!("the {what} is UTF-16 text; it must be UTF-8"))
            .with_hint(format!("convert it, e.g. `iconv -f UTF-16 -t UTF-8 {} > fixed.toml`", path.display())));
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
            let file = SourceFile::new(path, lossy);
            return Err(Problem::new(
                &file,
                at..at,
                format!("the {what} is not valid UTF-8 (byte 0x{:02X})", e.as_bytes()[at]),
            )
            .with_hint("save the file as UTF-8"));
        }
    };
    if let Some(at) = text.find('\0') {
        let file = SourceFile::new(path, text.replace('\0', " "));
        return Err(Problem::new(&file, at..at, format!("the {what} holds a NUL byte; is it UTF-16 or binary?"))
            .with_hint("save the file as UTF-8 text"));
    }
    Ok(text)
}

fn file_type(metadata: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = metadata.file_type();
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_files_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.toml");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs").success());
        assert!(read_text(&fifo, "runbook").unwrap_err().message.contains("a FIFO"));
        assert!(read_text(Path::new("/dev/zero"), "runbook").unwrap_err().message.contains("a device"));
        assert!(read_text(dir.path(), "runbook").unwrap_err().message.contains("a directory"));
        let huge = dir.path().join("huge.toml");
        std::fs::File::create(&huge).unwrap().set_len(MAX_INPUT_BYTES + 1).unwrap();
        assert!(read_text(&huge, "runbook").unwrap_err().message.contains("bytes"));
    }

    #[test]
    fn encodings_are_named_and_bad_bytes_located() {
        let path = Path::new("x.toml");
        let latin1 = decode(path, b"a = 1\nb = \"caf\xE9\"\n".to_vec(), "runbook").unwrap_err();
        assert_eq!((latin1.line, latin1.column), (2, 9));
        let utf16 = decode(path, vec![0xFF, 0xFE, b'a', 0], "runbook").unwrap_err();
        assert!(utf16.message.contains("UTF-16"));
        assert_eq!((utf16.line, utf16.column), (1, 1));
        let nul = decode(path, b"a = 1\n\0".to_vec(), "runbook").unwrap_err();
        assert_eq!((nul.line, nul.column), (2, 1));
        assert_eq!(decode(path, b"a = 1\n".to_vec(), "runbook").unwrap(), "a = 1\n");
    }
}
