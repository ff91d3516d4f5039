//! How mcpatch writes paths as text where only text will do (JSON output,
//! backup manifests, `file://` URLs for node), losslessly for any path bytes.
//!
//! In JSON a path that is valid UTF-8 is written as it is. A path that is not
//! is written as a `file://` URL of its bytes: every byte other than ASCII
//! letters, digits and `/-_.~@+` is percent-encoded (`/srv/caf\xE9` becomes
//! `file:///srv/caf%E9`). The paths mcpatch writes are absolute (they start
//! with `/`), so a value starting with `file://` is always such a URL, and
//! reading it back percent-decodes to the exact bytes.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serializer};

/// A `file://` URL built from an absolute path's bytes, percent-encoding every
/// byte outside `A-Z a-z 0-9 / - _ . ~ @ +`.
pub fn file_url(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut url = String::from("file://");
    for &b in path_bytes(&abs).iter() {
        match b {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'/'
            | b'-'
            | b'_'
            | b'.'
            | b'~'
            | b'@'
            | b'+' => url.push(b as char),
            _ => url.push_str(&format!("%{b:02X}")),
        }
    }
    url
}

/// The text form of a path: itself when it is UTF-8, else its `file://` URL.
pub fn to_text(path: &Path) -> Cow<'_, str> {
    match path.to_str() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(file_url(path)),
    }
}

/// The path a text form stands for (the inverse of [`to_text`]).
pub fn from_text(text: &str) -> PathBuf {
    let Some(rest) = text.strip_prefix("file://") else {
        return PathBuf::from(text);
    };
    let raw = rest.as_bytes();
    let mut bytes = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            raw[i],
            raw.get(i + 1).and_then(|b| hex(*b)),
            raw.get(i + 2).and_then(|b| hex(*b)),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                bytes.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                bytes.push(b);
                i += 1;
            }
        }
    }
    path_from_bytes(bytes)
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    Cow::Borrowed(path.as_os_str().as_bytes())
}

#[cfg(not(unix))]
fn path_bytes(path: &Path) -> Cow<'_, [u8]> {
    Cow::Owned(path.to_string_lossy().into_owned().into_bytes())
}

#[cfg(unix)]
fn path_from_bytes(bytes: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(bytes))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
}

/// `#[serde(serialize_with = "path_json::serialize")]` for a path field.
pub fn serialize<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&to_text(path))
}

/// `#[serde(deserialize_with = "path_json::deserialize")]` for a path field.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    let text = String::deserialize(d)?;
    Ok(from_text(&text))
}

/// `#[serde(serialize_with = "path_json::serialize_all")]` for a list of paths.
pub fn serialize_all<S: Serializer>(paths: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(paths.iter().map(|p| to_text(p)))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn utf8_paths_are_written_as_they_are() {
        assert_eq!(to_text(Path::new("/a b/%c/é.js")), "/a b/%c/é.js");
        assert_eq!(from_text("/a b/%c/é.js"), Path::new("/a b/%c/é.js"));
    }

    #[test]
    fn other_paths_are_file_urls_of_their_bytes_and_read_back_exactly() {
        let raw = Path::new(std::ffi::OsStr::from_bytes(b"/srv/caf\xe9 %/x.js"));
        let text = to_text(raw);
        assert_eq!(text, "file:///srv/caf%E9%20%25/x.js");
        assert_eq!(from_text(&text), raw);
    }
}
