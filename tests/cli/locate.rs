//! Where mcpatch looks: npm's global root worked out from npm's configuration
//! (checked against what the real `npm root -g` prints), the usual global
//! roots, the host's neighbours, what the search reads, and odd files and
//! names it must survive.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use super::*;

/// The real npm's own package folder: the oracle for npm's global root.
fn real_npm_package() -> PathBuf {
    let npm = which::which("npm").unwrap_or_else(|_| {
        panic!(
            "npm is not on PATH: these tests compare mcpatch with what the real `npm root -g` prints; \
             install Node.js with npm (apt-get install nodejs npm, or https://nodejs.org)"
        )
    });
    let real = npm.canonicalize().unwrap();
    real.ancestors()
        .find(|d| {
            std::fs::read_to_string(d.join("package.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .is_some_and(|v| v["name"] == "npm")
        })
        .unwrap_or_else(|| panic!("{} is not inside an npm package", real.display()))
        .to_path_buf()
}

/// Run a command, failing the test if it has not finished after a minute (a hang).
pub(super) fn output_within_a_minute(cmd: std::process::Command) -> Output {
    output_within(
        cmd,
        std::time::Duration::from_secs(60),
        "mcpatch (blocked on something it read?)",
    )
}

fn searched(v: &serde_json::Value) -> Vec<String> {
    v["searched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn install_paths(v: &serde_json::Value) -> Vec<String> {
    let mut paths: Vec<String> = v["installs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect();
    paths.sort();
    paths
}

fn real(p: &Path) -> String {
    p.canonicalize().unwrap().display().to_string()
}

/// A sandbox with a node at an nvm-style place first on PATH and a copy of
/// the real npm (its own code copied, so that its builtin `npmrc` is ours to
/// write; its dependencies linked) on PATH as `npm`.
struct NpmWorld {
    sb: Sandbox,
    /// `~/.nvm/versions/node/v22.0.0`, links resolved.
    nvm_prefix: PathBuf,
}

impl NpmWorld {
    fn new() -> Self {
        let sb = Sandbox::new();
        let bin = sb.root().join("home/.nvm/versions/node/v22.0.0/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let node = node22_dir().join("node");
        if std::fs::hard_link(&node, bin.join("node")).is_err() {
            std::fs::copy(&node, bin.join("node")).unwrap();
        }
        let real_npm = real_npm_package();
        let npm_package = sb.root().join("npm");
        std::fs::create_dir_all(&npm_package).unwrap();
        let st = std::process::Command::new("cp")
            .arg("-R")
            .arg(real_npm.join("bin"))
            .arg(real_npm.join("lib"))
            .arg(real_npm.join("package.json"))
            .arg(&npm_package)
            .status()
            .unwrap();
        assert!(st.success());
        std::os::unix::fs::symlink(
            real_npm.join("node_modules"),
            npm_package.join("node_modules"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            npm_package.join("bin/npm-cli.js"),
            sb.root().join("bin/npm"),
        )
        .unwrap();
        let nvm_prefix = bin.parent().unwrap().canonicalize().unwrap();
        NpmWorld { sb, nvm_prefix }
    }

    fn path_var(&self) -> std::ffi::OsString {
        std::env::join_paths([self.nvm_prefix.join("bin"), self.sb.root().join("bin")]).unwrap()
    }

    /// `mcpatch <args>` with this world's PATH, `env` and working folder.
    fn mcpatch(&self, args: &[&str], env: &[(&str, String)], cwd: &Path) -> std::process::Command {
        let mut c = self.sb.command(args);
        c.env("PATH", self.path_var())
            // npm would otherwise ask the registry whether it is up to date.
            .env("npm_config_update_notifier", "false")
            .current_dir(cwd);
        for (k, v) in env {
            c.env(k, v);
        }
        c
    }

    /// `npm root -g` under exactly the environment `mcpatch` gets.
    fn npm_root_g(&self, mcpatch: &std::process::Command) -> std::result::Result<String, String> {
        let mut npm = std::process::Command::new(self.sb.root().join("bin/npm"));
        npm.args(["root", "-g"]);
        for (k, v) in mcpatch.get_envs() {
            match v {
                Some(v) => npm.env(k, v),
                None => npm.env_remove(k),
            };
        }
        if let Some(dir) = mcpatch.get_current_dir() {
            npm.current_dir(dir);
        }
        let o = npm.output().unwrap();
        if o.status.success() {
            Ok(stdout(&o).trim().to_string())
        } else {
            Err(stderr(&o))
        }
    }

    /// The `npm global root` entry of `status --json`'s searched list, and what real npm says.
    fn compare(
        &self,
        env: &[(&str, String)],
        cwd: &Path,
    ) -> (String, std::result::Result<String, String>) {
        let cmd = self.mcpatch(&["status", "--json"], env, cwd);
        let npm = self.npm_root_g(&cmd);
        let o = output_within_a_minute(cmd);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
            panic!(
                "status --json is not JSON ({e}): {}{}",
                stdout(&o),
                stderr(&o)
            )
        });
        let entries: Vec<String> = searched(&v)
            .into_iter()
            .filter(|s| s.starts_with("npm global root ("))
            .collect();
        assert_eq!(entries.len(), 1, "{v:#}");
        (entries[0].clone(), npm)
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.sb.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }
}

#[test]
fn npm_global_root_matches_what_the_real_npm_prints_under_each_configuration() {
    struct Case {
        what: &'static str,
        /// Files to write, relative to the sandbox; `[S]` is the sandbox, `[NVM]` node's prefix.
        files: &'static [(&'static str, &'static str)],
        env: &'static [(&'static str, &'static str)],
        /// Working folder relative to the sandbox.
        cwd: &'static str,
        /// Where the prefix came from, as the searched list says it.
        source: &'static str,
        /// Put a link to node first on PATH instead of node itself.
        node_link: bool,
    }
    let node_source = "prefix of `node` on PATH ([NVM]/bin/node)";
    let cases = [
        Case {
            what: "node on PATH is a link: its real place decides, as node's execPath",
            files: &[],
            env: &[],
            cwd: "",
            source: node_source,
            node_link: true,
        },
        Case {
            what: "${VAR} and ~ in an environment value",
            files: &[],
            env: &[
                ("npm_config_prefix", "${MCPATCH_T_ROOT}/from-env"),
                ("MCPATCH_T_ROOT", "~/vars"),
            ],
            cwd: "",
            source: "prefix from npm_config_prefix",
            node_link: false,
        },
        Case {
            what: "~ in an environment value",
            files: &[],
            env: &[("NPM_CONFIG_PREFIX", "~/tilde-env")],
            cwd: "",
            source: "prefix from NPM_CONFIG_PREFIX",
            node_link: false,
        },
        Case {
            what: "nvm-style node, nothing configured",
            files: &[],
            env: &[],
            cwd: "",
            source: node_source,
            node_link: false,
        },
        Case {
            what: "NPM_CONFIG_PREFIX",
            files: &[],
            env: &[("NPM_CONFIG_PREFIX", "[S]/env-prefix")],
            cwd: "",
            source: "prefix from NPM_CONFIG_PREFIX",
            node_link: false,
        },
        Case {
            what: "npm_config_prefix in lower case, given after the upper-case one",
            files: &[],
            env: &[
                ("NPM_CONFIG_PREFIX", "[S]/upper"),
                ("npm_config_prefix", "[S]/lower"),
            ],
            cwd: "",
            source: "prefix from npm_config_prefix",
            node_link: false,
        },
        Case {
            what: "user npmrc with ~ expansion",
            files: &[("home/.npmrc", "prefix=~/npm-global\n")],
            env: &[],
            cwd: "",
            source: "prefix in user config [S]/home/.npmrc",
            node_link: false,
        },
        Case {
            what: "NPM_CONFIG_USERCONFIG with ${VAR} expansion",
            files: &[("elsewhere/npmrc", "prefix = ${MCPATCH_T_ROOT}/from-var\n")],
            env: &[
                ("NPM_CONFIG_USERCONFIG", "[S]/elsewhere/npmrc"),
                ("MCPATCH_T_ROOT", "[S]/vars"),
            ],
            cwd: "",
            source: "prefix in user config [S]/elsewhere/npmrc",
            node_link: false,
        },
        Case {
            what: "${VAR?} of an unset variable, an escaped \\${VAR}, and .. in the value",
            files: &[(
                "home/.npmrc",
                "prefix=${MCPATCH_T_ROOT}/a/${MCPATCH_T_UNSET?}b/../c/\\${MCPATCH_T_ROOT}\n",
            )],
            env: &[("MCPATCH_T_ROOT", "[S]/vars")],
            cwd: "",
            source: "prefix in user config [S]/home/.npmrc",
            node_link: false,
        },
        Case {
            what: "global npmrc beside node",
            files: &[("[NVM]/etc/npmrc", "prefix=[S]/from-global\n")],
            env: &[],
            cwd: "",
            source: "prefix in global config [NVM]/etc/npmrc",
            node_link: false,
        },
        Case {
            what: "NPM_CONFIG_GLOBALCONFIG",
            files: &[(
                "g/npmrc",
                "; a comment\nprefix = [S]/gc ; trailing comment\n",
            )],
            env: &[("NPM_CONFIG_GLOBALCONFIG", "[S]/g/npmrc")],
            cwd: "",
            source: "prefix in global config [S]/g/npmrc",
            node_link: false,
        },
        Case {
            what: "globalconfig named in the user npmrc",
            files: &[
                ("home/.npmrc", "globalconfig=~/ug/npmrc\n"),
                ("home/ug/npmrc", "prefix=\"[S]/quoted prefix\"\n"),
            ],
            env: &[],
            cwd: "",
            source: "prefix in global config [S]/home/ug/npmrc",
            node_link: false,
        },
        Case {
            what: "npm's builtin npmrc",
            files: &[("npm/npmrc", "prefix=[S]/builtin\n")],
            env: &[],
            cwd: "",
            source: "prefix in npm's builtin config [S]/npm/npmrc",
            node_link: false,
        },
        Case {
            what: "a builtin prefix moves the global npmrc to <that prefix>/etc/npmrc",
            files: &[
                ("npm/npmrc", "prefix=[S]/b\n"),
                ("b/etc/npmrc", "prefix=[S]/moved-global\n"),
            ],
            env: &[],
            cwd: "",
            source: "prefix in global config [S]/b/etc/npmrc",
            node_link: false,
        },
        Case {
            what: "environment over user over global over builtin",
            files: &[
                ("home/.npmrc", "prefix=[S]/user\n"),
                ("[NVM]/etc/npmrc", "prefix=[S]/global\n"),
                ("npm/npmrc", "prefix=[S]/builtin\n"),
            ],
            env: &[("npm_config_prefix", "[S]/env")],
            cwd: "",
            source: "prefix from npm_config_prefix",
            node_link: false,
        },
        Case {
            what: "user over global over builtin",
            files: &[
                ("home/.npmrc", "prefix=[S]/user\n"),
                ("[NVM]/etc/npmrc", "prefix=[S]/global\n"),
                ("npm/npmrc", "prefix=[S]/builtin\n"),
            ],
            env: &[],
            cwd: "",
            source: "prefix in user config [S]/home/.npmrc",
            node_link: false,
        },
        Case {
            what: "a builtin prefix: the global npmrc beside node is no longer read",
            files: &[
                ("[NVM]/etc/npmrc", "prefix=[S]/global\n"),
                ("npm/npmrc", "prefix=[S]/builtin\n"),
            ],
            env: &[],
            cwd: "",
            source: "prefix in npm's builtin config [S]/npm/npmrc",
            node_link: false,
        },
        Case {
            what: "global over builtin",
            files: &[
                ("g/npmrc", "prefix=[S]/global\n"),
                ("npm/npmrc", "prefix=[S]/builtin\n"),
            ],
            env: &[("NPM_CONFIG_GLOBALCONFIG", "[S]/g/npmrc")],
            cwd: "",
            source: "prefix in global config [S]/g/npmrc",
            node_link: false,
        },
        Case {
            what: "a prefix in a section is not the prefix",
            files: &[("home/.npmrc", "[section]\nprefix=[S]/in-section\n")],
            env: &[],
            cwd: "",
            source: node_source,
            node_link: false,
        },
        Case {
            what: "a byte-order mark, CRLF line ends and a later duplicate",
            files: &[(
                "home/.npmrc",
                "\u{FEFF}prefix=[S]/first\r\nprefix=[S]/second\r\n",
            )],
            env: &[],
            cwd: "",
            source: "prefix in user config [S]/home/.npmrc",
            node_link: false,
        },
        Case {
            what: "a relative prefix is taken from the working folder",
            files: &[("home/.npmrc", "prefix=rel/p\n"), ("work/.keep", "")],
            env: &[],
            cwd: "work",
            source: "prefix in user config [S]/home/.npmrc",
            node_link: false,
        },
        Case {
            what: "a project's .npmrc is not read in global mode",
            files: &[
                ("project/package.json", "{\"name\":\"p\"}"),
                ("project/.npmrc", "prefix=[S]/project-prefix\n"),
            ],
            env: &[],
            cwd: "project",
            source: node_source,
            node_link: false,
        },
        Case {
            what: "PREFIX sets npm's default",
            files: &[],
            env: &[("PREFIX", "[S]/termux-usr")],
            cwd: "",
            source: "prefix from PREFIX",
            node_link: false,
        },
        Case {
            what: "DESTDIR moves node's prefix",
            files: &[],
            env: &[("DESTDIR", "[S]/stage")],
            cwd: "",
            source: "prefix of `node` on PATH ([NVM]/bin/node) under DESTDIR [S]/stage",
            node_link: false,
        },
    ];
    for case in cases {
        let w = NpmWorld::new();
        let s = w.sb.root().display().to_string();
        let nvm = w.nvm_prefix.display().to_string();
        let fill = |t: &str| t.replace("[S]", &s).replace("[NVM]", &nvm);
        for (rel, text) in case.files {
            let path = fill(rel);
            let path = path.strip_prefix(&format!("{s}/")).unwrap_or(&path);
            w.write(path, &fill(text));
        }
        let mut env: Vec<(&str, String)> = case.env.iter().map(|(k, v)| (*k, fill(v))).collect();
        if case.node_link {
            let links = w.sb.root().join("links");
            std::fs::create_dir_all(&links).unwrap();
            std::os::unix::fs::symlink(w.nvm_prefix.join("bin/node"), links.join("node")).unwrap();
            let path = std::env::join_paths([links, w.sb.root().join("bin")]).unwrap();
            env.push(("PATH", path.to_string_lossy().into_owned()));
        }
        let (entry, npm) = w.compare(&env, &w.sb.root().join(case.cwd));
        let npm = npm.unwrap_or_else(|e| panic!("{}: the real npm failed: {e}", case.what));
        assert_eq!(
            entry,
            format!("npm global root ({npm}, {})", fill(case.source)),
            "{}",
            case.what
        );
    }
}

#[test]
fn a_prefix_that_is_not_a_path_is_skipped_with_the_reason_as_npm_fails_on_it() {
    let w = NpmWorld::new();
    w.write("home/.npmrc", "prefix=true\n");
    let (entry, npm) = w.compare(&[], w.sb.root());
    assert!(npm.is_err(), "the real npm accepted prefix=true: {npm:?}");
    assert_eq!(
        entry,
        format!(
            "npm global root (skipped: prefix in user config {}/home/.npmrc is true, not a path (npm stops on it too))",
            w.sb.root().display()
        )
    );
}

#[test]
fn npm_root_is_said_to_be_skipped_when_nothing_gives_it() {
    let sb = Sandbox::new();
    let o = sb
        .cmd(&["status"])
        .env("PATH", sb.root().join("bin"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        "no @deepseek-ai/dsh-mcp-client, mcp-remote, @google/gemini-cli, @modelcontextprotocol/sdk, @modelcontextprotocol/client or @ai-sdk/mcp install found; looked in:
  - `dsh` on PATH (not found)
  - `gemini` on PATH (not found)
  - the project of the current folder (no node_modules above it)
  - npm global root (skipped: no `node` on PATH and no prefix set in the environment or npm's config files)
  - DSH_HOME profiles ([SANDBOX]/home/.dsh/profiles)
  - npx cache ([SANDBOX]/home/.npm/_npx, default cache)
  - pnpm dlx cache ([SANDBOX]/home/.cache/pnpm/dlx)
help: if DSH, mcp-remote, gemini-cli, the MCP TypeScript SDK or the app that uses @ai-sdk/mcp is installed elsewhere, pass its folder with --path
"
    );
}

#[test]
fn npm_config_files_that_are_fifos_or_huge_are_ignored_and_said_so() {
    let w = NpmWorld::new();
    let npmrc = w.sb.root().join("home/.npmrc");
    let c = std::ffi::CString::new(npmrc.as_os_str().as_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let global = w.write(
        "big/npmrc",
        &format!("prefix=/x\n;{}\n", "x".repeat(1 << 20)),
    );
    let cmd = w.mcpatch(
        &["status", "--json"],
        &[("NPM_CONFIG_GLOBALCONFIG", global.display().to_string())],
        w.sb.root(),
    );
    let o = output_within_a_minute(cmd);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = w.sb.root().display();
    assert!(
        searched(&v).contains(&format!(
            "npm global root ({}/lib/node_modules, prefix of `node` on PATH ({}/bin/node); \
             ignored user config {s}/home/.npmrc: it is a FIFO, not a regular file; \
             ignored global config {s}/big/npmrc: it is larger than 1024 KiB)",
            w.nvm_prefix.display(),
            w.nvm_prefix.display()
        )),
        "{v:#}"
    );
}

#[test]
fn the_install_is_found_with_dsh_off_path_through_npm_prefix() {
    for how in ["~/.npmrc", "NPM_CONFIG_PREFIX"] {
        let w = NpmWorld::new();
        let client = w.sb.global_dsh("0.1.0-rc.8");
        std::fs::remove_file(w.sb.root().join("bin/dsh")).unwrap();
        let prefix = w.sb.root().join("prefix");
        let mut env = Vec::new();
        let source = if how == "~/.npmrc" {
            w.write("home/.npmrc", &format!("prefix={}\n", prefix.display()));
            format!(
                "prefix in user config {}/home/.npmrc",
                w.sb.root().display()
            )
        } else {
            env.push(("NPM_CONFIG_PREFIX", prefix.display().to_string()));
            "prefix from NPM_CONFIG_PREFIX".to_string()
        };
        let cmd = w.mcpatch(&["status", "--json"], &env, w.sb.root());
        let npm = w.npm_root_g(&cmd).unwrap();
        assert_eq!(
            npm,
            prefix.join("lib/node_modules").display().to_string(),
            "{how}"
        );
        let o = output_within_a_minute(cmd);
        assert_eq!(code(&o), 1, "{how}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(install_paths(&v), [real(&client)], "{how}: {v:#}");
        assert_eq!(
            v["installs"][0]["found_via"],
            serde_json::json!([format!("npm global root ({npm}, {source})")]),
            "{how}"
        );
        assert_eq!(v["installs"][0]["state"], "affected");
    }
}

/// A global DSH, a second global prefix npm points at, and a pnpm profile.
fn three_installs(w: &NpmWorld) -> (Vec<String>, Vec<(&'static str, String)>) {
    let nested = w.sb.global_dsh("0.1.0-rc.8");
    let other = w.sb.client_install("0.1.0-rc.7", "npm-prefix");
    let profile = w.sb.pnpm_profile("0.1.0-rc.8", "work");
    let env = vec![(
        "NPM_CONFIG_PREFIX",
        w.sb.root().join("npm-prefix").display().to_string(),
    )];
    let mut want = vec![real(&nested), real(&other), real(&profile)];
    want.sort();
    (want, env)
}

#[test]
fn plain_status_finds_the_installs_that_asking_npm_finds() {
    let w = NpmWorld::new();
    let (want, env) = three_installs(&w);
    let plain = output_within_a_minute(w.mcpatch(&["status", "--json"], &env, w.sb.root()));
    let asked =
        output_within_a_minute(w.mcpatch(&["status", "--json", "--npm"], &env, w.sb.root()));
    let plain: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    let asked: serde_json::Value = serde_json::from_slice(&asked.stdout).unwrap();
    assert_eq!(install_paths(&plain), want, "{plain:#}");
    assert_eq!(install_paths(&asked), want, "{asked:#}");
    let root = w.sb.root().join("npm-prefix/lib/node_modules");
    assert!(searched(&plain).contains(&format!(
        "npm global root ({}, prefix from NPM_CONFIG_PREFIX)",
        root.display()
    )));
    assert!(searched(&asked).contains(&format!("`npm root -g` ({})", root.display())));
}

#[test]
fn npm_flag_says_when_npm_is_missing_or_fails_and_falls_back() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "npm-prefix");
    let prefix = sb.root().join("npm-prefix");
    let run = |sb: &Sandbox| {
        let o = sb
            .cmd(&["status", "--json", "--npm"])
            .env("NPM_CONFIG_PREFIX", &prefix)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(install_paths(&v), [real(&client)], "{v:#}");
        searched(&v)
    };
    let fallback = format!(
        "npm global root ({}/lib/node_modules, prefix from NPM_CONFIG_PREFIX)",
        prefix.display()
    );
    assert_eq!(
        run(&sb)[3..5],
        [
            "`npm root -g` (skipped: `npm` on PATH: not found)".to_string(),
            fallback.clone()
        ]
    );
    // An npm that fails (a broken install): its failure is named.
    let npm = sb.root().join("bin/npm");
    std::fs::write(&npm, "#!/bin/sh\nexit 3\n").unwrap();
    std::fs::set_permissions(&npm, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        run(&sb)[3..5],
        [
            format!(
                "`{} root -g` (failed: it exited with exit status: 3)",
                npm.display()
            ),
            fallback
        ]
    );
    let o = sb.run(&["status", "--npm", "--path", sb.root().to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).starts_with("error: the argument '--npm' cannot be used with '--path <P>'"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_usual_global_roots_under_home_and_the_system_are_searched_without_the_override() {
    let sb = Sandbox::new();
    let nvm = sb.client_install("0.1.0-rc.8", "home/.nvm/versions/node/v20.1.0");
    let fnm = sb.client_install(
        "0.1.0-rc.8",
        "home/.local/share/fnm/node-versions/v22.1.0/installation",
    );
    let volta = sb.copy_client(
        "0.1.0-rc.8",
        &sb.root()
            .join("home/.volta/tools/image/packages/@deepseek-ai/dsh/lib/node_modules/@deepseek-ai/dsh/node_modules")
            .join(CLIENT),
    );
    let system = sb.client_install("0.1.0-rc.7", "sys/usr");
    let o = sb
        .cmd(&["status", "--json"])
        .env_remove("MCPATCH_SYSTEM_ROOTS")
        .env("MCPATCH_SYSROOT", sb.root().join("sys"))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let node = node22_dir().join("node").canonicalize().unwrap();
    let s = sb.root().display();
    assert_eq!(
        searched(&v),
        [
            "`dsh` on PATH (not found)".to_string(),
            "`gemini` on PATH (not found)".to_string(),
            "the project of the current folder (no node_modules above it)".to_string(),
            format!(
                "npm global root ({}/lib/node_modules, prefix of `node` on PATH ({}))",
                node.parent().unwrap().parent().unwrap().display(),
                node.display()
            ),
            format!("DSH_HOME profiles ({s}/home/.dsh/profiles)"),
            format!("global root {s}/home/.nvm/versions/node/v20.1.0/lib/node_modules"),
            format!("global root {s}/home/.volta/tools/image/packages/@deepseek-ai/dsh/lib/node_modules"),
            format!("global root {s}/home/.local/share/fnm/node-versions/v22.1.0/installation/lib/node_modules"),
            format!("global root {s}/sys/usr/lib/node_modules"),
            format!("npx cache ({s}/home/.npm/_npx, default cache)"),
            format!("pnpm dlx cache ({s}/home/.cache/pnpm/dlx)"),
        ],
        "the machine's own global roots must not be searched: {v:#}"
    );
    let mut want = vec![real(&nvm), real(&fnm), real(&volta), real(&system)];
    want.sort();
    assert_eq!(install_paths(&v), want);
}

#[test]
fn a_client_hoisted_next_to_the_dsh_package_is_found_through_dsh() {
    let sb = Sandbox::new();
    let nm = sb.root().join("prefix/lib/node_modules");
    let host = nm.join("@deepseek-ai/dsh");
    std::fs::create_dir_all(host.join("lib")).unwrap();
    std::fs::write(
        host.join("package.json"),
        r#"{"name":"@deepseek-ai/dsh","version":"0.1.0-rc.8","bin":{"dsh":"lib/bin.js"}}"#,
    )
    .unwrap();
    std::fs::write(host.join("lib/bin.js"), "#!/usr/bin/env node\n").unwrap();
    std::fs::set_permissions(
        host.join("lib/bin.js"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink(host.join("lib/bin.js"), sb.root().join("bin/dsh")).unwrap();
    let client = sb.copy_client("0.1.0-rc.8", &nm.join(CLIENT));
    let v = status_json(&sb, &[]);
    assert_eq!(install_paths(&v), [real(&client)], "{v:#}");
    assert_eq!(
        v["installs"][0]["found_via"],
        serde_json::json!([format!("`dsh` on PATH ({}/bin/dsh)", sb.root().display())])
    );
}

fn write_package(dir: &Path, name: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        format!(r#"{{"name":"{name}","version":"1.0.0"}}"#),
    )
    .unwrap();
}

/// A package folder holding `files` files and `folders` nested sub-folders with a file each.
fn fill_package(dir: &Path, files: usize, folders: usize) {
    for i in 0..files {
        std::fs::write(dir.join(format!("f{i}.js")), "x").unwrap();
    }
    let mut deep = dir.join("dist");
    for i in 0..folders {
        deep = deep.join(format!("d{i}"));
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("x.js"), "x").unwrap();
    }
}

fn folders_read(root: &Path) -> (usize, Vec<PathBuf>) {
    let env = mcpatch::environment::Environment::from_vars(Vec::new(), root.to_path_buf());
    let targets = mcpatch::registry::select(None).unwrap();
    let report = mcpatch::locate::locate(&targets, &[root.to_path_buf()], &env).unwrap();
    (
        report.folders_read,
        report.installs.into_iter().map(|i| i.package_dir).collect(),
    )
}

#[test]
fn the_search_lists_node_modules_folders_and_never_what_is_inside_packages() {
    let sb = Sandbox::new();
    let nm = sb.root().join("g/lib/node_modules");
    let packages: Vec<PathBuf> = (0..30).map(|i| nm.join(format!("pkg-{i}"))).collect();
    for (i, p) in packages.iter().enumerate() {
        write_package(p, &format!("pkg-{i}"));
    }
    for name in ["@scope/a", "@scope/b"] {
        write_package(&nm.join(name), name);
    }
    // The package looked for, a nested node_modules, pnpm's store, and npm's `.bin`.
    let direct = nm.join(CLIENT);
    write_package(&direct, CLIENT);
    std::fs::create_dir_all(direct.join("lib")).unwrap();
    std::fs::write(direct.join("lib/index.js"), "x").unwrap();
    write_package(&nm.join("pkg-3/node_modules/nested"), "nested");
    let slot = nm.join(".pnpm/@deepseek-ai+dsh-mcp-client@1.0.0/node_modules");
    write_package(&slot.join(CLIENT), CLIENT);
    std::fs::create_dir_all(slot.join(CLIENT).join("lib")).unwrap();
    std::fs::write(slot.join(CLIENT).join("lib/index.js"), "y").unwrap();
    write_package(&nm.join(".pnpm/dep@2.0.0/node_modules/dep"), "dep");
    std::fs::create_dir_all(nm.join(".bin")).unwrap();
    std::fs::write(nm.join(".bin/tool"), "x").unwrap();

    // Listed: the root, @scope, @deepseek-ai, pkg-3/node_modules, .pnpm, the two
    // slots' node_modules, and the @deepseek-ai scope in the first slot.
    let expected_reads = 8;
    let (reads, found) = folders_read(&nm);
    assert_eq!(reads, expected_reads);
    assert_eq!(found.len(), 2, "{found:?}");

    // Files and sub-folders inside every package change nothing that is read.
    for p in packages.iter().chain([&direct, &nm.join("@scope/a")]) {
        fill_package(p, 40, 6);
    }
    let (reads, found) = folders_read(&nm);
    assert_eq!(
        reads, expected_reads,
        "the search read inside package folders"
    );
    assert_eq!(found.len(), 2);

    // Links that loop back (a scope and a nested node_modules pointing at the
    // root) are followed once and never again.
    std::os::unix::fs::symlink(&nm, nm.join("@loop")).unwrap();
    std::os::unix::fs::symlink(&nm, nm.join("pkg-1/node_modules")).unwrap();
    let (reads, found) = folders_read(&nm);
    assert_eq!(reads, expected_reads);
    assert_eq!(found.len(), 2);

    // Searched from the prefix above: one listing more, the prefix itself.
    let (reads, _) = folders_read(&sb.root().join("g"));
    assert_eq!(reads, expected_reads + 1);
}

#[test]
fn non_utf8_folder_names_do_not_stop_the_search() {
    let sb = Sandbox::new();
    let odd = |s: &[u8]| OsStr::from_bytes(s).to_os_string();
    let nm = sb.root().join(odd(b"g\xff/lib/node_modules"));
    write_package(&nm.join(odd(b"pkg-\xfe")), "odd");
    write_package(&nm.join(odd(b"@sc\xff/x")), "odd-scoped");
    write_package(&nm.join(odd(b"pkg-\xfe/node_modules/in\xff")), "odd-nested");
    std::fs::create_dir_all(nm.join(odd(b".pnpm/s\xff@1/node_modules"))).unwrap();
    let in_odd_prefix = sb.copy_client("0.1.0-rc.8", &nm.join(CLIENT));
    let in_odd_profile = sb.copy_client(
        "0.1.0-rc.7",
        &sb.dsh_home()
            .join("profiles")
            .join(odd(b"p\xfe"))
            .join("node_modules")
            .join(CLIENT),
    );
    // The library carries the names byte for byte.
    let (_, found) = folders_read(&nm);
    assert_eq!(found, [in_odd_prefix.canonicalize().unwrap()]);
    // The command finds both and says so in text.
    let o = sb
        .cmd(&["status", "--path"])
        .arg(nm.parent().unwrap().parent().unwrap())
        .arg("--path")
        .arg(sb.dsh_home().join("profiles"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let text = sb.normalize(&o.stdout);
    assert!(
        text.contains(&format!(
            "[SANDBOX]/g\u{FFFD}/lib/node_modules/{CLIENT}  0.1.0-rc.8  affected"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "[SANDBOX]/home/.dsh/profiles/p\u{FFFD}/node_modules/{CLIENT}  0.1.0-rc.7  affected"
        )),
        "{text}"
    );
    assert!(
        text.ends_with(
            "2 install(s): 2 affected, 0 patched, 0 outdated, 0 upstream-fixed, 0 modified, 0 unsupported\n"
        ),
        "{text}"
    );
    assert!(in_odd_profile.is_dir());
}

#[test]
fn a_package_json_that_is_a_device_a_fifo_or_huge_is_not_a_package() {
    let sb = Sandbox::new();
    let nm = sb.root().join("g/lib/node_modules");
    let real_one = sb.copy_client("0.1.0-rc.8", &nm.join(CLIENT));
    let zero = sb.copy_client("0.1.0-rc.8", &nm.join("@a/x/node_modules").join(CLIENT));
    std::fs::remove_file(zero.join("package.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", zero.join("package.json")).unwrap();
    let fifo = sb.copy_client("0.1.0-rc.8", &nm.join("@b/x/node_modules").join(CLIENT));
    std::fs::remove_file(fifo.join("package.json")).unwrap();
    let c = std::ffi::CString::new(fifo.join("package.json").as_os_str().as_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let huge = sb.copy_client("0.1.0-rc.8", &nm.join("@c/x/node_modules").join(CLIENT));
    std::fs::write(
        huge.join("package.json"),
        format!(
            r#"{{"name":"{CLIENT}","version":"0.1.0-rc.8","padding":"{}"}}"#,
            "x".repeat(2 << 20)
        ),
    )
    .unwrap();
    // Large, under the 1 MiB cap (an npm that embeds the readme): a package.
    let large = sb.copy_client("0.1.0-rc.8", &nm.join("@d/x/node_modules").join(CLIENT));
    std::fs::write(
        large.join("package.json"),
        format!(
            r#"{{"name":"{CLIENT}","version":"0.1.0-rc.8","readme":"{}"}}"#,
            "x".repeat(512 << 10)
        ),
    )
    .unwrap();
    for p in ["@a/x", "@b/x", "@c/x", "@d/x"] {
        write_package(&nm.join(p), p);
    }
    let mut cmd = sb.command(&["status", "--json", "--path"]);
    cmd.arg(&nm);
    let o = output_within_a_minute(cmd);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&o), stderr(&o)));
    assert_eq!(install_paths(&v), [real(&large), real(&real_one)], "{v:#}");
    assert_eq!(v["installs"][0]["version"], "0.1.0-rc.8", "{v:#}");
}
