//! Reads the small files the search meets on disk (package.json, npmrc files,
//! launcher scripts) without trusting them: a FIFO or device is never opened
//! for reading, and no more than a fixed number of bytes is ever read.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug)]
pub enum Refused {
    /// It does not exist.
    Missing,
    /// It is not a regular file (a folder, FIFO, socket or device).
    NotAFile(&'static str),
    /// It holds more than the cap.
    TooLarge { cap: u64 },
    /// Opening or reading it failed.
    Io(std::io::Error),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Missing => write!(f, "it does not exist"),
            Refused::NotAFile(kind) => write!(f, "it is a {kind}, not a regular file"),
            Refused::TooLarge { cap } => write!(f, "it is larger than {} KiB", cap / 1024),
            Refused::Io(e) => write!(f, "{e}"),
        }
    }
}

/// The whole file, if it is a regular file of at most `cap` bytes.
pub fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, Refused> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(Refused::Io)?;
    if bytes.len() as u64 > cap {
        return Err(Refused::TooLarge { cap });
    }
    Ok(bytes)
}

/// The first `cap` bytes of a regular file (for scripts, where the head is enough).
pub fn read_head(path: &Path, cap: u64) -> Result<Vec<u8>, Refused> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(cap)
        .read_to_end(&mut bytes)
        .map_err(Refused::Io)?;
    Ok(bytes)
}

/// Open a regular file for reading. Its type is checked before opening (stat
/// never blocks, and opening some devices has effects), and again on the
/// opened handle, which is opened non-blocking so that a FIFO swapped in
/// between the two checks cannot hang the open.
fn open_regular(path: &Path) -> Result<File, Refused> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Refused::Missing,
        _ => Refused::Io(e),
    })?;
    check_type(&meta)?;
    let file = open_nonblocking(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Refused::Missing,
        _ => Refused::Io(e),
    })?;
    check_type(&file.metadata().map_err(Refused::Io)?)?;
    Ok(file)
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

fn check_type(meta: &std::fs::Metadata) -> Result<(), Refused> {
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok(());
    }
    if ft.is_dir() {
        return Err(Refused::NotAFile("folder"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return Err(Refused::NotAFile("FIFO"));
        }
        if ft.is_socket() {
            return Err(Refused::NotAFile("socket"));
        }
        if ft.is_char_device() || ft.is_block_device() {
            return Err(Refused::NotAFile("device"));
        }
    }
    Err(Refused::NotAFile("special file"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_at_the_cap_is_read_and_one_byte_more_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, vec![b'x'; 1024]).unwrap();
        assert_eq!(read_capped(&p, 1024).unwrap().len(), 1024);
        assert!(matches!(
            read_capped(&p, 1023),
            Err(Refused::TooLarge { cap: 1023 })
        ));
        assert_eq!(read_head(&p, 10).unwrap().len(), 10);
    }

    #[test]
    fn devices_fifos_and_folders_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for (p, kind) in [(&fifo, "FIFO"), (&zero, "device")] {
            match read_capped(p, 1 << 20) {
                Err(Refused::NotAFile(k)) => assert_eq!(k, kind),
                other => panic!("{}: {other:?}", p.display()),
            }
            assert!(matches!(read_head(p, 10), Err(Refused::NotAFile(_))));
        }
        assert!(matches!(
            read_capped(dir.path(), 10),
            Err(Refused::NotAFile("folder"))
        ));
        assert!(matches!(
            read_capped(&dir.path().join("nope"), 10),
            Err(Refused::Missing)
        ));
    }
}
