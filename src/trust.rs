//! Whose code mcpatch runs. `verify` and apply's load check run an install's
//! own code (DSH's plugin and its dependencies, mcp-remote's `dist/proxy.js`,
//! gemini-cli's `bundle/gemini.js`) with node. Run as root, that code, or the
//! folders holding it, may belong to an ordinary user (Homebrew's Cellar, an
//! npx cache or nvm under a preserved `HOME`): running it as root would hand
//! that user root. So, as root, mcpatch first looks at the install's package
//! folder, every folder on the way to it from `/`, the files it names and the
//! node it runs; if another user owns one, or can write it through its group
//! or as anyone, it refuses (naming the path, the owner and the fix) unless
//! the user passed `--trust-owner`. See docs/security.md.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A path on the way to code mcpatch would run that another user can change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    /// The path (as resolved: symlinks followed).
    pub path: PathBuf,
    /// Who can change it, in words: "is owned by alice (uid 1000)",
    /// "is writable by group staff (gid 20)", "is writable by every user".
    pub why: String,
    /// The user to run mcpatch as instead, when one owns it.
    pub owner: Option<String>,
}

impl Untrusted {
    /// The fix, for a `help:` line: run as the owner, or take the write bit
    /// away; or say `--trust-owner`.
    pub fn fix(&self, command: &str) -> String {
        let first = match &self.owner {
            Some(owner) => {
                format!("run mcpatch as {owner} (`sudo -u {owner} mcpatch {command} ...`)")
            }
            None => format!(
                "make it writable by root only (`chmod go-w {}`)",
                self.path.display()
            ),
        };
        format!("{first}, or pass --trust-owner to run its code as root anyway")
    }

    /// One line for `status`.
    pub fn note(&self) -> String {
        format!(
            "{} {}: as root, verify and apply will not run this install's code unless given --trust-owner{}",
            self.path.display(),
            self.why,
            match &self.owner {
                Some(owner) => format!(" (or run them as {owner})"),
                None => String::new(),
            }
        )
    }
}

/// As root, without `--trust-owner` (`trusted`): an error naming the first
/// path another user can change on the way to the code `what` would run,
/// and the fix for `command` (the subcommand).
pub fn check(
    package: &Path,
    files: &[&Path],
    trusted: bool,
    what: &'static str,
    command: &str,
) -> crate::error::Result<()> {
    if trusted {
        return Ok(());
    }
    match untrusted(package, files) {
        None => Ok(()),
        Some(u) => Err(crate::error::Error::UntrustedCode {
            what,
            fix: u.fix(command),
            path: u.path,
            why: u.why,
        }),
    }
}

/// Whether mcpatch runs as root (the only case it refuses in).
pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no memory effects.
    unsafe { libc::geteuid() == 0 }
}

/// As root: the first path another user can change among `package`, each
/// of `files` (the file checked, node), and every folder on the way to each
/// of them; None when not root or when all are root's alone.
pub fn untrusted(package: &Path, files: &[&Path]) -> Option<Untrusted> {
    if !running_as_root() {
        return None;
    }
    first_untrusted(package, files)
}

fn first_untrusted(package: &Path, files: &[&Path]) -> Option<Untrusted> {
    let mut seen = BTreeSet::new();
    for start in std::iter::once(package).chain(files.iter().copied()) {
        // Resolved, so a symlink on the way is judged by where it leads
        // (node follows it too); what cannot be resolved is judged as given.
        let real = std::fs::canonicalize(start).unwrap_or_else(|_| start.to_path_buf());
        let mut chain: Vec<&Path> = real.ancestors().collect();
        chain.reverse();
        for path in chain {
            if !seen.insert(path.to_path_buf()) {
                continue;
            }
            if let Some(u) = judge(path) {
                return Some(u);
            }
        }
    }
    None
}

/// Whether someone but root can change `path` (a folder with the sticky bit,
/// such as /tmp, only lets each user change their own entries: fine).
fn judge(path: &Path) -> Option<Untrusted> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let mode = meta.mode();
    let sticky_dir = meta.is_dir() && mode & 0o1000 != 0;
    if meta.uid() != 0 {
        let owner = user_name(meta.uid());
        return Some(Untrusted {
            path: path.to_path_buf(),
            why: format!("is owned by {}", said_user(owner.as_deref(), meta.uid())),
            owner: Some(owner.unwrap_or_else(|| format!("'#{}'", meta.uid()))),
        });
    }
    if mode & 0o002 != 0 && !sticky_dir && !meta.file_type().is_symlink() {
        return Some(Untrusted {
            path: path.to_path_buf(),
            why: "is writable by every user".into(),
            owner: None,
        });
    }
    if mode & 0o020 != 0 && meta.gid() != 0 && !sticky_dir && !meta.file_type().is_symlink() {
        let group = group_name(meta.gid());
        return Some(Untrusted {
            path: path.to_path_buf(),
            why: format!(
                "is writable by group {}",
                match group {
                    Some(g) => format!("{g} (gid {})", meta.gid()),
                    None => format!("gid {}", meta.gid()),
                }
            ),
            owner: None,
        });
    }
    None
}

fn said_user(name: Option<&str>, uid: u32) -> String {
    match name {
        Some(n) => format!("{n} (uid {uid})"),
        None => format!("uid {uid}, a user with no name"),
    }
}

/// The login name of `uid`, from the user database.
fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 4096];
    // SAFETY: a zeroed passwd is a valid buffer for getpwuid_r to fill.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwuid_r writes only into the buffers we pass, with their sizes.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut out) };
    if rc != 0 || out.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: pw_name points into `buf`, NUL-terminated by getpwuid_r.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    name.to_str().ok().map(str::to_string)
}

/// The name of group `gid`, from the group database.
fn group_name(gid: u32) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 16384];
    // SAFETY: a zeroed group is a valid buffer for getgrgid_r to fill.
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::group = std::ptr::null_mut();
    // SAFETY: getgrgid_r writes only into the buffers we pass, with their sizes.
    let rc = unsafe { libc::getgrgid_r(gid, &mut grp, buf.as_mut_ptr(), buf.len(), &mut out) };
    if rc != 0 || out.is_null() || grp.gr_name.is_null() {
        return None;
    }
    // SAFETY: gr_name points into `buf`, NUL-terminated by getgrgid_r.
    let name = unsafe { std::ffi::CStr::from_ptr(grp.gr_name) };
    name.to_str().ok().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_folder_everyone_can_write_on_the_way_is_named_unless_sticky() {
        let top = tempfile::tempdir().unwrap();
        let pkg = top.path().join("a/pkg");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(top.path().join("a"), std::fs::Permissions::from_mode(0o777))
            .unwrap();
        if !running_as_root() {
            // Owned by this user, who is not root: the owner is named first.
            let u = first_untrusted(&pkg, &[]).unwrap();
            assert!(u.why.starts_with("is owned by "), "{u:?}");
            return;
        }
        let u = first_untrusted(&pkg, &[]).unwrap();
        assert_eq!(u.path, top.path().join("a").canonicalize().unwrap());
        assert_eq!(u.why, "is writable by every user");
        std::fs::set_permissions(
            top.path().join("a"),
            std::fs::Permissions::from_mode(0o1777),
        )
        .unwrap();
        assert_eq!(first_untrusted(&pkg, &[]), None);
    }
}
