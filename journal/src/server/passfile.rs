//! The password for a server journal, from PostgreSQL's password file (`PGPASSFILE`, else
//! `~/.pgpass`): `host:port:database:user:password` lines, `*` matching anything, `\` escaping
//! `:` and `\`. As libpq does, a file others can read is ignored, with a warning.

use std::path::PathBuf;

use crate::error::Error;

pub(crate) fn password_for(config: &postgres::Config) -> Result<Option<String>, Error> {
    let path = match std::env::var_os("PGPASSFILE") {
        Some(path) => PathBuf::from(path),
        None => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(".pgpass"),
            None => return Ok(None),
        },
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?.permissions().mode();
    if mode & 0o077 != 0 {
        eprintln!(
            "warning: password file `{}` has group or world access; it is ignored (chmod 0600 it)",
            path.display()
        );
        return Ok(None);
    }
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(name)) => name.clone(),
        Some(postgres::config::Host::Unix(_)) | None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let wanted =
        [host.as_str(), port.as_str(), config.get_dbname().unwrap_or_default(), config.get_user().unwrap_or_default()];
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split(line);
        if fields.len() != 5 {
            continue;
        }
        if fields[..4].iter().zip(wanted).all(|(field, value)| field == "*" || field == value) {
            return Ok(Some(fields[4].clone()));
        }
    }
    Ok(None)
}

/// A line's fields, split on unescaped `:`.
fn split(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().expect("never empty").push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().expect("never empty").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn fields_split_on_unescaped_colons_and_the_password_keeps_the_rest() {
        assert_eq!(split(r"db.example:5432:*:ops:pa\:ss\\w:rd"), ["db.example", "5432", "*", "ops", r"pa:ss\w:rd"]);
    }
}
