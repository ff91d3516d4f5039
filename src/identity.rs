//! What a file was when mcpatch read it (device, inode, size, modification
//! time, mode, owner and sha256, all from one open descriptor), read with a
//! size cap and only if it is a regular file, so that just before writing over
//! it mcpatch can tell whether anything replaced or rewrote it meanwhile.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The most mcpatch reads of an installed client file or a saved copy: DSH's
/// plugin is about 33 KB and gemini-cli's bundle chunks a few MB, so a file
/// this large is not one of them.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// The most mcpatch reads of a small metadata file (package.json, manifest.json).
pub const MAX_METADATA_BYTES: u64 = 1024 * 1024;

/// sha256 of bytes as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A file's text: validated as UTF-8 first, which is several times faster than
/// the lossy decoder on megabytes of bundled JavaScript (the text is the same).
pub fn text_of(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Which file, in which state: equal identities mean the same inode, unchanged
/// in size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, i64),
}

/// A file's bytes and what it was when they were read.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub bytes: Vec<u8>,
    pub sha256: String,
    pub identity: Identity,
    /// The full mode, file type bits included (`st_mode`).
    pub mode: u32,
    pub owner: (u32, u32),
}

/// Identity of an open file.
pub fn of_file(file: &File, path: &Path) -> Result<Identity> {
    let meta = file.metadata().map_err(|e| {
        Error::io(
            "read",
            path,
            e,
            "check that the file exists and is readable",
        )
    })?;
    Ok(of_metadata(&meta))
}

/// Identity of the file at `path` now.
pub fn of_path(path: &Path) -> Result<Identity> {
    let meta = std::fs::metadata(path).map_err(|e| {
        Error::io(
            "read",
            path,
            e,
            "check that the file exists and is readable",
        )
    })?;
    Ok(of_metadata(&meta))
}

fn of_metadata(meta: &std::fs::Metadata) -> Identity {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }
    }
    #[cfg(not(unix))]
    Identity {
        dev: 0,
        ino: 0,
        size: meta.len(),
        mtime: meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| (d.as_secs() as i64, d.subsec_nanos() as i64))
            .unwrap_or((0, 0)),
    }
}

/// Open a regular file for reading without blocking on a FIFO or device
/// planted at its path, and check what it is before reading.
pub fn open_regular(path: &Path, follow_symlinks: bool) -> Result<(File, std::fs::Metadata)> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let nofollow = if follow_symlinks { 0 } else { libc::O_NOFOLLOW };
        options.custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | nofollow);
    }
    #[cfg(not(unix))]
    let _ = follow_symlinks;
    let file = options.open(path).map_err(|e| {
        Error::io(
            "read",
            path,
            e,
            "check that the file exists and is readable",
        )
    })?;
    let meta = file.metadata().map_err(|e| {
        Error::io(
            "read",
            path,
            e,
            "check that the file exists and is readable",
        )
    })?;
    if !meta.is_file() {
        return Err(Error::NotAFile {
            path: path.to_path_buf(),
            found: kind_of(&meta),
        });
    }
    Ok((file, meta))
}

/// Read at most `limit` bytes of a regular file: more is an error, never read.
pub fn read_capped(
    path: &Path,
    limit: u64,
    follow_symlinks: bool,
) -> Result<(Vec<u8>, std::fs::Metadata)> {
    let (file, meta) = open_regular(path, follow_symlinks)?;
    let too_large = || Error::TooLarge {
        path: path.to_path_buf(),
        limit,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| {
        Error::io(
            "read",
            path,
            e,
            "check that the file exists and is readable",
        )
    })?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok((bytes, meta))
}

/// Read and hash an installed file (up to [`MAX_FILE_BYTES`]) with its identity.
pub fn read(path: &Path) -> Result<Snapshot> {
    let (bytes, meta) = read_capped(path, MAX_FILE_BYTES, true)?;
    let (mode, owner) = mode_and_owner(&meta);
    Ok(Snapshot {
        sha256: sha256_hex(&bytes),
        identity: of_metadata(&meta),
        bytes,
        mode,
        owner,
    })
}

/// What changed at `path` since `before` was read, in words; `None` if nothing did.
pub fn changes(path: &Path, before: &Snapshot) -> Result<Option<String>> {
    let now = match of_path(path) {
        Ok(id) => id,
        Err(_) => return Ok(Some("it was removed".into())),
    };
    let was = before.identity;
    if (now.dev, now.ino) != (was.dev, was.ino) {
        return Ok(Some(format!(
            "it was replaced by another file (inode {} is now {})",
            was.ino, now.ino
        )));
    }
    if now.size != was.size {
        return Ok(Some(format!(
            "it was rewritten ({} bytes, now {})",
            was.size, now.size
        )));
    }
    if now.mtime != was.mtime {
        return Ok(Some(
            "it was rewritten (its modification time changed)".into(),
        ));
    }
    let again = read(path)?;
    if again.sha256 != before.sha256 {
        return Ok(Some(format!(
            "it was rewritten (sha256 {}, now {})",
            before.sha256, again.sha256
        )));
    }
    Ok(None)
}

fn mode_and_owner(meta: &std::fs::Metadata) -> (u32, (u32, u32)) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.mode(), (meta.uid(), meta.gid()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0o644, (0, 0))
    }
}

/// A word for a file type that is not a regular file.
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a folder"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_file() {
        "a regular file"
    } else {
        "something else"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_installed_file_of_16_mib_is_read_and_one_byte_more_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("chunk.js");
        let file = std::fs::File::create(&p).unwrap();
        file.set_len(16 << 20).unwrap();
        assert_eq!(read(&p).unwrap().bytes.len(), 16 << 20);
        file.set_len((16 << 20) + 1).unwrap();
        assert!(matches!(
            read(&p),
            Err(Error::TooLarge { limit, .. }) if limit == 16 << 20
        ));
    }

    #[test]
    fn a_package_json_of_1_mib_gives_its_version_and_one_byte_more_gives_none() {
        let dir = tempfile::tempdir().unwrap();
        let head = br#"{"version": "1.2.3", "pad": ""#;
        let tail = br#""}"#;
        let write = |size: usize| {
            let mut text = head.to_vec();
            text.resize(size - tail.len(), b'x');
            text.extend_from_slice(tail);
            std::fs::write(dir.path().join("package.json"), text).unwrap();
        };
        write(1 << 20);
        let version = crate::classify::package_version(dir.path());
        assert_eq!(version.as_deref(), Some("1.2.3"));
        write((1 << 20) + 1);
        assert_eq!(crate::classify::package_version(dir.path()), None);
    }

    #[test]
    fn a_files_sha256_is_the_lowercase_hex_of_the_standard_digest() {
        // FIPS 180-2's example: what sha256sum prints for "abc".
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("index.js");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(read(&p).unwrap().sha256, sha256_hex(b"abc"));
    }

    #[test]
    fn a_snapshot_carries_the_files_mode_and_owner() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("index.js");
        std::fs::write(&p, b"a").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        let snap = read(&p).unwrap();
        // SAFETY: getuid and getgid only read the process's ids.
        let me = unsafe { (libc::getuid(), libc::getgid()) };
        assert_eq!((snap.mode & 0o7777, snap.owner), (0o640, me));
    }

    #[test]
    fn a_symlink_is_refused_unless_followed_and_a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("index.js");
        std::fs::write(&target, b"a").unwrap();
        let link = dir.path().join("link.js");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(open_regular(&link, false).is_err());
        assert!(open_regular(&link, true).unwrap().1.is_file());
        let fifo = dir.path().join("fifo.js");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // A blocking open of a FIFO with no writer would never return.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(
                open_regular(&fifo, true)
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
            );
        });
        let opened = rx.recv_timeout(std::time::Duration::from_secs(10));
        assert!(matches!(opened, Ok(Err(_))), "{opened:?}");
    }

    #[test]
    fn a_file_of_exactly_the_cap_is_read_and_one_byte_more_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![b'x'; 64]).unwrap();
        assert_eq!(read_capped(&p, 64, false).unwrap().0.len(), 64);
        assert!(matches!(
            read_capped(&p, 63, false),
            Err(Error::TooLarge { limit: 63, .. })
        ));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_holding_more_than_its_size_says_is_refused_not_cut_at_the_cap() {
        // A procfs file says 0 bytes and holds far more, as a file still being
        // written holds more than its size when it was opened: the cap is on
        // what is read, and a file read only in part is never taken as whole.
        let p = Path::new("/proc/self/status");
        assert_eq!(std::fs::metadata(p).unwrap().len(), 0);
        assert!(matches!(
            read_capped(p, 64, false),
            Err(Error::TooLarge { limit: 64, .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn each_kind_of_file_is_named_by_its_kind() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        std::fs::write(at("file"), b"x").unwrap();
        std::fs::create_dir(at("folder")).unwrap();
        std::os::unix::fs::symlink("file", at("link")).unwrap();
        let fifo =
            std::ffi::CString::new(at("fifo").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let _socket = std::os::unix::net::UnixListener::bind(at("socket")).unwrap();
        let kind = |p: &Path| kind_of(&std::fs::symlink_metadata(p).unwrap());
        assert_eq!(kind(&at("file")), "a regular file");
        assert_eq!(kind(&at("folder")), "a folder");
        assert_eq!(kind(&at("link")), "a symbolic link");
        assert_eq!(kind(&at("fifo")), "a FIFO");
        assert_eq!(kind(&at("socket")), "a socket");
        assert_eq!(kind(Path::new("/dev/null")), "a device");
    }
}
