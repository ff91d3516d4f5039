//! A copy of the folder of an install's entry file (gemini-cli's `bundle/`)
//! in which the file to check replaces the installed one, so the real program
//! loads it: a bundle's chunks import each other by relative name, so a file
//! can only be tried in place. The copy is a private folder beside the
//! original (its bare imports resolve from the install, exactly as the
//! original's), its files hard links where the disk allows (else copies); it
//! is removed when dropped, or by the next run if mcpatch was killed. For
//! `verify --backup` and the check `apply` makes of a patched copy of a
//! release mcpatch does not know.
//!
//! The install's folder may be writable by another user, who could swap the
//! copy for a symlink while it is built (root would then fill whatever it
//! points to). So the copy is built only through open directory descriptors
//! (`mkdirat`, `openat` with `O_NOFOLLOW`, `linkat`, `symlinkat`), never by a
//! path inside it, and is checked to still be the folder built, owned by the
//! user running mcpatch and private, before anything runs from it.

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use crate::error::{Error, Result};

/// Name prefix of the folder, beside the bundle folder.
const PREFIX: &str = ".mcpatch-verify-bundle-";
const HELP: &str =
    "run mcpatch as a user who can write the install's folder (the one `apply` writes)";
const REPLACED_HELP: &str = "another user can write the install's folder and may have changed it while mcpatch worked; check who owns it (`ls -la` of it), then run mcpatch as that user";

/// The entry's folder copied, with the file to check in place.
pub struct Mirror {
    /// The copy, open: everything in it is made relative to this.
    dir: OwnedFd,
    /// The install's package folder, open, that holds the copy.
    parent: OwnedFd,
    /// The copy's name in `parent`.
    name: CString,
    /// The copy's path (for node and for messages only).
    path: PathBuf,
    /// The entry file inside the copy.
    pub entry: PathBuf,
}

impl Mirror {
    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the copy's path still is the folder built (not a symlink or a
    /// folder put in its place), owned by this user and private, with the
    /// entry file the one placed in it.
    pub fn check(&self) -> Result<()> {
        let ours =
            fstat(self.dir.as_raw_fd()).map_err(|e| Error::io("check", &self.path, e, HELP))?;
        let there =
            lstat(&self.path).map_err(|e| Error::io("check", &self.path, e, REPLACED_HELP))?;
        let kind = there.st_mode & libc::S_IFMT;
        if kind != libc::S_IFDIR || (there.st_dev, there.st_ino) != (ours.st_dev, ours.st_ino) {
            return Err(replaced(
                &self.path,
                if kind == libc::S_IFLNK {
                    "a symlink"
                } else {
                    "another file or folder"
                },
            ));
        }
        // SAFETY: geteuid has no memory effects.
        let me = unsafe { libc::geteuid() };
        if ours.st_uid != me || ours.st_mode & 0o077 != 0 {
            return Err(replaced(&self.path, "not private to this user"));
        }
        let name = cstring(self.entry.file_name().unwrap_or_default())?;
        let placed = fstatat(self.dir.as_raw_fd(), &name)
            .map_err(|e| Error::io("check", &self.entry, e, REPLACED_HELP))?;
        let seen =
            lstat(&self.entry).map_err(|e| Error::io("check", &self.entry, e, REPLACED_HELP))?;
        if (placed.st_dev, placed.st_ino) != (seen.st_dev, seen.st_ino) {
            return Err(replaced(&self.entry, "another file"));
        }
        Ok(())
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        // Emptied through its descriptor, whatever its path now points to.
        let _ = empty(self.dir.as_raw_fd());
        if self.check_path_only() {
            // SAFETY: unlinkat(2) of a name in a folder we hold open; AT_REMOVEDIR never follows a link.
            unsafe {
                libc::unlinkat(
                    self.parent.as_raw_fd(),
                    self.name.as_ptr(),
                    libc::AT_REMOVEDIR,
                );
            }
        }
    }
}

impl Mirror {
    /// Whether the name in the package folder still is our folder.
    fn check_path_only(&self) -> bool {
        match (
            fstat(self.dir.as_raw_fd()),
            fstatat(self.parent.as_raw_fd(), &self.name),
        ) {
            (Ok(a), Ok(b)) => (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino),
            _ => false,
        }
    }
}

fn replaced(path: &Path, found: &'static str) -> Error {
    Error::MirrorReplaced {
        path: path.to_path_buf(),
        found,
    }
}

/// Copy the folder of `entry` (the package's bin entry), with `file` (inside
/// that folder) replaced by `checked`; names starting with `skip` (the copies
/// verify keeps beside the file) are left out.
pub fn build(entry: &Path, file: &Path, checked: &Path, skip: &str) -> Result<Mirror> {
    let bundle = entry.parent().ok_or_else(|| not_inside(file, entry))?;
    let relative = file
        .strip_prefix(bundle)
        .map_err(|_| not_inside(file, entry))?
        .to_path_buf();
    let package = bundle.parent().ok_or_else(|| not_inside(file, entry))?;
    crate::stage::remove_dead_scratch(package, PREFIX);
    let mirror = make_dir(package, entry)?;
    crate::kill_point::reached("mirror-made")?;
    // The folders being filled, from the copy down to the current one.
    let mut open: Vec<(PathBuf, OwnedFd)> = Vec::new();
    let mut placed = false;
    for item in WalkDir::new(bundle).min_depth(1).follow_links(false) {
        let item = item.map_err(|e| {
            let path = e.path().unwrap_or(bundle).to_path_buf();
            Error::io("read", path, e.into(), HELP)
        })?;
        if item
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(skip))
        {
            continue;
        }
        let from = item.path();
        let rel = from.strip_prefix(bundle).unwrap_or(from).to_path_buf();
        let parent_rel = rel.parent().unwrap_or(Path::new(""));
        while open.last().is_some_and(|(p, _)| p != parent_rel) {
            open.pop();
        }
        let at = open
            .last()
            .map_or(mirror.dir.as_raw_fd(), |(_, fd)| fd.as_raw_fd());
        let to = mirror.path.join(&rel);
        let name = cstring(item.file_name())?;
        let kind = item.file_type();
        if kind.is_dir() {
            let fd = mkdir_open(at, &name).map_err(|e| Error::io("create", &to, e, HELP))?;
            open.push((rel, fd));
        } else if rel == relative {
            link_or_copy(checked, at, &name).map_err(|e| Error::io("create", &to, e, HELP))?;
            placed = true;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(from).map_err(|e| Error::io("read", from, e, HELP))?;
            let target = cstring(target.as_os_str())?;
            // SAFETY: symlinkat(2) with two NUL-terminated strings we own.
            let rc = unsafe { libc::symlinkat(target.as_ptr(), at, name.as_ptr()) };
            if rc != 0 {
                return Err(Error::io(
                    "create",
                    &to,
                    std::io::Error::last_os_error(),
                    HELP,
                ));
            }
        } else if kind.is_file() {
            link_or_copy(from, at, &name).map_err(|e| Error::io("create", &to, e, HELP))?;
        }
    }
    drop(open);
    if !placed {
        let to = mirror.path.join(&relative);
        let at = open_path_at(mirror.dir.as_raw_fd(), relative.parent())
            .map_err(|e| Error::io("open", &to, e, HELP))?;
        let name = cstring(relative.file_name().unwrap_or_default())?;
        link_or_copy(
            checked,
            at.as_ref()
                .map_or(mirror.dir.as_raw_fd(), |f| f.as_raw_fd()),
            &name,
        )
        .map_err(|e| Error::io("create", &to, e, HELP))?;
    }
    mirror.check()?;
    Ok(mirror)
}

/// Make the private copy folder in `package` and open it, refusing anything
/// but a folder of ours there.
fn make_dir(package: &Path, entry: &Path) -> Result<Mirror> {
    let parent = open_dir(package).map_err(|e| Error::io("open", package, e, HELP))?;
    let mut last = None;
    for attempt in 0..16u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let name = format!("{PREFIX}{:x}{nanos:08x}{attempt:x}", std::process::id());
        let path = package.join(&name);
        let c = cstring(OsStr::new(&name))?;
        // SAFETY: mkdirat(2) of a NUL-terminated name in a folder we hold open.
        if unsafe { libc::mkdirat(parent.as_raw_fd(), c.as_ptr(), 0o700) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                last = Some(e);
                continue;
            }
            return Err(Error::io("create", &path, e, HELP));
        }
        let dir = open_at(parent.as_raw_fd(), &c)
            .map_err(|e| Error::io("open", &path, e, REPLACED_HELP))?;
        // SAFETY: fchmod(2) on a descriptor we own: private whatever the umask.
        unsafe { libc::fchmod(dir.as_raw_fd(), 0o700) };
        // Locked while in use, so no other run takes it for a dead run's leftover.
        // SAFETY: flock(2) on a descriptor we own.
        if unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: unlinkat(2) of the empty folder just made, by its name in the folder we hold.
            unsafe { libc::unlinkat(parent.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) };
            return Err(Error::io("lock", &path, e, HELP));
        }
        let mirror = Mirror {
            dir,
            parent,
            name: c,
            entry: path.join(entry.file_name().unwrap_or_default()),
            path,
        };
        let st =
            fstat(mirror.dir.as_raw_fd()).map_err(|e| Error::io("check", &mirror.path, e, HELP))?;
        // SAFETY: geteuid has no memory effects.
        if st.st_uid != unsafe { libc::geteuid() } {
            return Err(replaced(&mirror.path, "a folder another user made"));
        }
        return Ok(mirror);
    }
    Err(Error::io(
        "create",
        package.join(PREFIX),
        last.unwrap_or_else(|| std::io::Error::other("no free name")),
        HELP,
    ))
}

fn not_inside(file: &Path, entry: &Path) -> Error {
    Error::io(
        "check",
        file,
        std::io::Error::other(format!(
            "not inside the folder of the entry file {}",
            entry.display()
        )),
        "report this install to mcpatch: its layout is not one it can verify",
    )
}

fn cstring(name: &OsStr) -> Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| {
        Error::io(
            "copy",
            PathBuf::from(name),
            std::io::Error::other("a name with a NUL byte"),
            HELP,
        )
    })
}

fn cpath(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("a path with a NUL byte"))
}

fn owned(fd: RawFd) -> std::io::Result<OwnedFd> {
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just returned by the kernel, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Open the install's package folder (a path the user gave or mcpatch found).
fn open_dir(path: &Path) -> std::io::Result<OwnedFd> {
    let c = cpath(path)?;
    // SAFETY: open(2) of a NUL-terminated path.
    owned(unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })
}

/// Open the folder `name` in `at`, never through a symlink.
fn open_at(at: RawFd, name: &CStr) -> std::io::Result<OwnedFd> {
    // SAFETY: openat(2) of a NUL-terminated name relative to a descriptor we hold.
    owned(unsafe {
        libc::openat(
            at,
            name.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })
}

/// Make the private folder `name` in `at` and open it.
fn mkdir_open(at: RawFd, name: &CStr) -> std::io::Result<OwnedFd> {
    // SAFETY: mkdirat(2) of a NUL-terminated name relative to a descriptor we hold.
    if unsafe { libc::mkdirat(at, name.as_ptr(), 0o700) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    open_at(at, name)
}

/// Open the folders of `rel` (none: `at` itself) one by one from `at`.
fn open_path_at(at: RawFd, rel: Option<&Path>) -> std::io::Result<Option<OwnedFd>> {
    let mut current: Option<OwnedFd> = None;
    for part in rel.into_iter().flat_map(|r| r.components()) {
        let name = CString::new(part.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::other("a name with a NUL byte"))?;
        let from = current.as_ref().map_or(at, |f| f.as_raw_fd());
        current = Some(open_at(from, &name)?);
    }
    Ok(current)
}

/// A hard link of `from` at `name` in `at`, or a private copy where linking is refused.
fn link_or_copy(from: &Path, at: RawFd, name: &CStr) -> std::io::Result<()> {
    let c = cpath(from)?;
    // SAFETY: linkat(2) with NUL-terminated strings; flags 0: a symlink is linked, not followed.
    if unsafe { libc::linkat(libc::AT_FDCWD, c.as_ptr(), at, name.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW);
    let mut source = options.open(from)?;
    // SAFETY: openat(2) of a NUL-terminated name relative to a descriptor we hold.
    let out = owned(unsafe {
        libc::openat(
            at,
            name.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    })?;
    let mut out = std::fs::File::from(out);
    std::io::copy(&mut source, &mut out)?;
    Ok(())
}

/// Remove everything inside the folder open at `dir`, never following a link.
fn empty(dir: RawFd) -> std::io::Result<()> {
    // SAFETY: dup(2) of a descriptor we hold; fdopendir takes the copy.
    let copy = unsafe { libc::dup(dir) };
    if copy < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fdopendir(3) on a descriptor we own; closedir below closes it.
    let stream = unsafe { libc::fdopendir(copy) };
    if stream.is_null() {
        // SAFETY: closing the copy fdopendir did not take.
        unsafe { libc::close(copy) };
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: rewinddir on the stream just opened (the copy shares the offset).
    unsafe { libc::rewinddir(stream) };
    let mut names = Vec::new();
    loop {
        // SAFETY: readdir(3) on our stream; the entry is copied out before the next call.
        let entry = unsafe { libc::readdir(stream) };
        if entry.is_null() {
            break;
        }
        // SAFETY: d_name is a NUL-terminated name inside the entry.
        let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) }.to_owned();
        if name.as_bytes() != b"." && name.as_bytes() != b".." {
            names.push(name);
        }
    }
    // SAFETY: closes the stream and the copy it holds.
    unsafe { libc::closedir(stream) };
    for name in names {
        // SAFETY: unlinkat(2) of a name in the folder we hold; never follows a link.
        if unsafe { libc::unlinkat(dir, name.as_ptr(), 0) } == 0 {
            continue;
        }
        if let Ok(sub) = open_at(dir, &name) {
            let _ = empty(sub.as_raw_fd());
        }
        // SAFETY: as above, for a folder now empty.
        unsafe { libc::unlinkat(dir, name.as_ptr(), libc::AT_REMOVEDIR) };
    }
    Ok(())
}

fn fstat(fd: RawFd) -> std::io::Result<libc::stat> {
    // SAFETY: a zeroed stat is a valid buffer for fstat(2) to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat(2) into a buffer we own.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

fn fstatat(at: RawFd, name: &CStr) -> std::io::Result<libc::stat> {
    // SAFETY: a zeroed stat is a valid buffer for fstatat(2) to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstatat(2) of a NUL-terminated name, not following a link, into a buffer we own.
    if unsafe { libc::fstatat(at, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st)
}

fn lstat(path: &Path) -> std::io::Result<libc::stat> {
    let c = cpath(path)?;
    fstatat(libc::AT_FDCWD, &c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_has_every_file_of_the_bundle_and_the_checked_file_in_place() {
        let pkg = tempfile::tempdir().unwrap();
        let bundle = pkg.path().join("bundle");
        std::fs::create_dir_all(bundle.join("policies/deep")).unwrap();
        std::fs::write(bundle.join("gemini.js"), "import './chunk-A.js';").unwrap();
        std::fs::write(bundle.join("chunk-A.js"), "original").unwrap();
        std::fs::write(bundle.join("policies/read.toml"), "x").unwrap();
        std::fs::write(bundle.join("policies/deep/d.toml"), "d").unwrap();
        std::fs::create_dir_all(bundle.join("z")).unwrap();
        std::fs::write(bundle.join("z/z.txt"), "z").unwrap();
        std::os::unix::fs::symlink("chunk-A.js", bundle.join("link.js")).unwrap();
        std::fs::write(bundle.join(".mcpatch-verify-1.js"), "patched").unwrap();
        let m = build(
            &bundle.join("gemini.js"),
            &bundle.join("chunk-A.js"),
            &bundle.join(".mcpatch-verify-1.js"),
            ".mcpatch-verify-",
        )
        .unwrap();
        assert_eq!(m.entry, m.path().join("gemini.js"));
        assert_eq!(m.path().parent(), Some(pkg.path()));
        let read = |p: &str| std::fs::read_to_string(m.path().join(p)).unwrap();
        assert_eq!(read("chunk-A.js"), "patched");
        assert_eq!(read("policies/read.toml"), "x");
        assert_eq!(read("policies/deep/d.toml"), "d");
        assert_eq!(read("z/z.txt"), "z");
        assert_eq!(
            std::fs::read_link(m.path().join("link.js")).unwrap(),
            Path::new("chunk-A.js")
        );
        assert!(!m.path().join(".mcpatch-verify-1.js").exists());
        // The install's own file is untouched.
        assert_eq!(
            std::fs::read_to_string(bundle.join("chunk-A.js")).unwrap(),
            "original"
        );
        let copy = m.path().to_path_buf();
        drop(m);
        assert!(!copy.exists());
    }

    #[test]
    fn a_copy_swapped_for_a_symlink_is_refused_and_nothing_is_made_through_it() {
        let pkg = tempfile::tempdir().unwrap();
        let bundle = pkg.path().join("bundle");
        std::fs::create_dir_all(bundle.join("sub")).unwrap();
        std::fs::write(bundle.join("gemini.js"), "x").unwrap();
        std::fs::write(bundle.join("sub/a.js"), "a").unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let m = make_dir(pkg.path(), &bundle.join("gemini.js")).unwrap();
        let moved = pkg.path().join("moved");
        std::fs::rename(&m.path, &moved).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &m.path).unwrap();
        assert!(matches!(
            m.check(),
            Err(Error::MirrorReplaced {
                found: "a symlink",
                ..
            })
        ));
        drop(m);
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
