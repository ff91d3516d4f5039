//! The user's scope: the `--path`, `--npm` and `--target` flags of this run,
//! carried into every command mcpatch suggests, so that "run `mcpatch apply`"
//! after `status --path PROJECT` patches that project and not every other
//! install. Set once from the command line; applied where text is printed
//! for a person (JSON keeps the bare commands: its reader knows its own flags).

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The flags of this run that say which installs it works on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    pub paths: Vec<PathBuf>,
    pub npm: bool,
    pub target: Option<String>,
}

static SCOPE: OnceLock<Scope> = OnceLock::new();

/// Record this run's scope (the first call wins).
pub fn set(scope: Scope) {
    let _ = SCOPE.set(scope);
}

/// The subcommands that find installs, and so take the scope's flags.
const SCOPED: [&str; 5] = ["status", "apply", "revert", "diff", "verify"];

impl Scope {
    /// The flags as a shell would need them typed, each value quoted when needed.
    pub fn flags(&self) -> String {
        let mut flags = Vec::new();
        for p in &self.paths {
            let p = p.to_string_lossy();
            flags.push(format!("--path {}", quote(&crate::output::clean(&p))));
        }
        if self.npm {
            flags.push("--npm".to_string());
        }
        if let Some(t) = &self.target {
            flags.push(format!("--target {}", quote(&crate::output::clean(t))));
        }
        flags.join(" ")
    }

    /// `text` with this scope's flags put after every `mcpatch SUBCOMMAND` of a
    /// subcommand that finds installs (`mcpatch verify --command` excepted: a
    /// bridge has no install).
    pub fn apply<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let flags = self.flags();
        if flags.is_empty() || !text.contains("mcpatch ") {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len() + flags.len());
        let mut rest = text;
        while let Some(at) = rest.find("mcpatch ") {
            let before_ok =
                at == 0 || matches!(rest.as_bytes()[at - 1], b'`' | b' ' | b'(' | b'\'');
            let after = &rest[at + "mcpatch ".len()..];
            let word_len = after
                .find(|c: char| !c.is_ascii_lowercase())
                .unwrap_or(after.len());
            let word = &after[..word_len];
            let tail = &after[word_len..];
            let ends_word = tail.is_empty() || tail.starts_with([' ', '`', '\'', ',', ';', ')']);
            let end = at + "mcpatch ".len() + word_len;
            out.push_str(&rest[..end]);
            if before_ok
                && ends_word
                && SCOPED.contains(&word)
                && !tail.starts_with(" --command")
                && !tail.starts_with(" --path")
            {
                out.push(' ');
                out.push_str(&flags);
            }
            rest = &rest[end..];
        }
        out.push_str(rest);
        Cow::Owned(out)
    }
}

/// This run's flags that say which installs it works on ("" for none).
pub fn flags() -> String {
    SCOPE.get().map(Scope::flags).unwrap_or_default()
}

/// Which of this run's flags a suggested command must repeat, in words, for
/// where they do not fit: "the --path and --target you gave" ("" for none).
pub fn reminder() -> String {
    let Some(s) = SCOPE.get() else {
        return String::new();
    };
    let mut names = Vec::new();
    if !s.paths.is_empty() {
        names.push("--path");
    }
    if s.npm {
        names.push("--npm");
    }
    if s.target.is_some() {
        names.push("--target");
    }
    match names.as_slice() {
        [] => String::new(),
        [one] => format!("the {one} you gave"),
        [rest @ .., last] => format!("the {} and {last} you gave", rest.join(", ")),
    }
}

/// [`commands`] for text wrapped to `max` columns: when a value of this run's
/// flags (a long path) cannot fit a line, the commands stay as they are and
/// one sentence asks for the flags in words instead.
pub fn commands_within(text: &str, max: Option<usize>) -> Cow<'_, str> {
    let Some(scope) = SCOPE.get() else {
        return Cow::Borrowed(text);
    };
    let scoped = scope.apply(text);
    if scoped == text {
        return Cow::Borrowed(text);
    }
    let longest = scope
        .flags()
        .split(' ')
        .map(|w| w.chars().count())
        .max()
        .unwrap_or(0);
    match max {
        Some(m) if longest + 12 > m => Cow::Owned(format!(
            "{text} (run each command with {} this run, so that it works on the same installs)",
            reminder()
        )),
        _ => scoped,
    }
}

/// [`Scope::apply`] with this run's scope (none set: `text` as it is).
pub fn commands(text: &str) -> Cow<'_, str> {
    match SCOPE.get() {
        Some(s) => s.apply(text),
        None => Cow::Borrowed(text),
    }
}

/// `value` as one shell word: as it is when it holds only characters no shell
/// treats specially, else in single quotes (a `'` inside written `'\''`).
pub fn quote(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:@,+%".contains(c));
    if plain {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(paths: &[&str], target: Option<&str>) -> Scope {
        Scope {
            paths: paths.iter().map(PathBuf::from).collect(),
            npm: false,
            target: target.map(str::to_string),
        }
    }

    #[test]
    fn paths_are_quoted_only_when_a_shell_would_split_or_expand_them() {
        assert_eq!(quote("/srv/app/node_modules"), "/srv/app/node_modules");
        assert_eq!(quote("my project"), "'my project'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$HOME"), "'$HOME'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn every_suggested_command_that_finds_installs_keeps_the_scope() {
        let s = scope(&["proj", "a b"], Some("gemini-cli"));
        assert_eq!(
            s.apply("review with `mcpatch diff`, then `mcpatch apply --yes` to patch anyway"),
            "review with `mcpatch diff --path proj --path 'a b' --target gemini-cli`, then `mcpatch apply --path proj --path 'a b' --target gemini-cli --yes` to patch anyway"
        );
        assert_eq!(
            s.apply("`mcpatch backups` lists them; `mcpatch verify --command X`"),
            "`mcpatch backups` lists them; `mcpatch verify --command X`"
        );
        assert_eq!(
            s.apply("mcpatch patched this file; run `mcpatch status`"),
            "mcpatch patched this file; run `mcpatch status --path proj --path 'a b' --target gemini-cli`"
        );
        assert_eq!(
            scope(&[], None).apply("run `mcpatch apply`"),
            "run `mcpatch apply`"
        );
    }
}
