//! Help and version that cannot be written (issue 29, item 13): into
//! /dev/full they are an error, said on stderr with exit 2, never a silent 0.

use super::*;

#[test]
fn help_and_version_into_a_full_device_fail_with_exit_2_and_say_why() {
    let sb = Sandbox::new();
    for (args, what) in [
        (&["--help"][..], "the help"),
        (&["-h"][..], "the help"),
        (&["--version"][..], "the version"),
        (&["status", "--help"][..], "the help"),
        (&["help", "apply"][..], "the help"),
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = sb.command(args).stdout(full).output().unwrap();
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!("error: cannot write {what} to standard output: No space left on device (os error 28)\nhelp: send it somewhere that can take it, e.g. `mcpatch --help | less` or `mcpatch --help > FILE` on a disk with room\n"),
            "{args:?}"
        );
    }
    // Into a pipe they are whole, with exit 0.
    let o = sb.run(&["--version"]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        stdout(&o),
        format!("mcpatch {}\n", env!("CARGO_PKG_VERSION"))
    );
    let o = sb.run(&["status", "--help"]);
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("\nUsage: mcpatch status [OPTIONS]\n"),
        "{}",
        stdout(&o)
    );
}
