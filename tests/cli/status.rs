//! `mcpatch status`: finding and classifying installs.

use super::*;

#[test]
fn status_reports_the_real_rc8_package_as_affected() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "npm-global");
    let o = sb.run(&["status", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        "PATH  VERSION  STATE  NEXT STEP
[SANDBOX]/npm-global/lib/node_modules/@deepseek-ai/dsh-mcp-client  0.1.0-rc.8  affected  run `mcpatch apply --path [SANDBOX]/npm-global/lib/node_modules/@deepseek-ai/dsh-mcp-client`
  sha256 b126dcec…7d56 (original)
  note: affected: the patch targets this revision
1 install(s): 1 affected, 0 patched, 0 outdated, 0 upstream-fixed, 0 modified, 0 unsupported
"
    );
}

#[test]
fn status_json_follows_the_documented_schema() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let v = status_json(&sb, &["--path", client.to_str().unwrap()]);
    let installs = v["installs"].as_array().unwrap();
    assert_eq!(installs.len(), 1);
    let i = &installs[0];
    let mut keys: Vec<&str> = i.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "dropped",
            "file",
            "found_via",
            "hard_links",
            "next_step",
            "note",
            "path",
            "revision",
            "running",
            "same_file_as",
            "sha256",
            "state",
            "target",
            "version"
        ]
    );
    assert_eq!(i["target"], "dsh-mcp-client");
    assert_eq!(i["path"], client.canonicalize().unwrap().to_str().unwrap());
    assert_eq!(
        i["file"],
        client
            .join("lib/index.js")
            .canonicalize()
            .unwrap()
            .to_str()
            .unwrap()
    );
    assert_eq!(i["version"], "0.1.0-rc.8");
    assert_eq!(i["sha256"], ORIGINAL);
    assert_eq!(i["state"], "affected");
    assert_eq!(i["revision"], "original");
    assert_eq!(i["hard_links"], 1);
    assert_eq!(i["same_file_as"], serde_json::json!([]));
    assert_eq!(i["next_step"], "run `mcpatch apply`");
    assert!(v["searched"].as_array().unwrap()[0]
        .as_str()
        .unwrap()
        .starts_with("--path "));
}

#[test]
fn status_finds_the_nested_copy_through_dsh_on_path() {
    let sb = Sandbox::new();
    let client = sb.global_dsh("0.1.0-rc.8");
    let v = status_json(&sb, &[]);
    let installs = v["installs"].as_array().unwrap();
    assert_eq!(installs.len(), 1, "{v:#}");
    assert_eq!(
        installs[0]["path"],
        client.canonicalize().unwrap().to_str().unwrap()
    );
    assert_eq!(installs[0]["state"], "affected");
    assert!(
        installs[0]["found_via"][0]
            .as_str()
            .unwrap()
            .starts_with("`dsh` on PATH ("),
        "{v:#}"
    );
}

#[test]
fn status_finds_the_host_through_a_shim_script_on_path() {
    let sb = Sandbox::new();
    let client = sb.global_dsh("0.1.0-rc.8");
    std::fs::remove_file(sb.root().join("bin/dsh")).unwrap();
    // A pnpm-style shell shim that names the host's path instead of linking to it.
    let shim = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-fixtures/dsh-shim.sh");
    std::fs::copy(shim, sb.root().join("bin/dsh")).unwrap();
    std::fs::set_permissions(
        sb.root().join("bin/dsh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let v = status_json(&sb, &[]);
    let paths: Vec<&str> = v["installs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [client.canonicalize().unwrap().to_str().unwrap()],
        "{v:#}"
    );
}

#[test]
fn status_reports_each_pnpm_file_once_and_notes_the_hard_link() {
    let sb = Sandbox::new();
    let a = sb.pnpm_profile("0.1.0-rc.8", "work");
    let b = sb.pnpm_profile("0.1.0-rc.8", "play");
    let v = status_json(&sb, &[]);
    let installs = v["installs"].as_array().unwrap();
    assert_eq!(installs.len(), 1, "one real file, found twice: {v:#}");
    let i = &installs[0];
    assert_eq!(i["hard_links"], 3, "store + two profiles");
    let mut both = vec![
        i["path"].as_str().unwrap().to_string(),
        i["same_file_as"][0].as_str().unwrap().to_string(),
    ];
    both.sort();
    let mut expected = vec![
        a.canonicalize().unwrap().display().to_string(),
        b.canonicalize().unwrap().display().to_string(),
    ];
    expected.sort();
    assert_eq!(both, expected);
    let o = sb.run(&["status"]);
    let text = sb.normalize(&o.stdout);
    assert!(
        text.contains(
            "3 hard links: a shared store copy, replaced by a new file, never written through"
        ),
        "{text}"
    );
    assert!(
        text.contains("same file as [SANDBOX]/home/.dsh/profiles/"),
        "{text}"
    );
}

#[test]
fn status_finds_pnpm_profiles_at_the_profiles_root() {
    let sb = Sandbox::new();
    let nm = sb.dsh_home().join("profiles/node_modules");
    let client = sb.copy_client("0.1.0-rc.8", &nm.join(CLIENT));
    let v = status_json(&sb, &[]);
    assert_eq!(
        v["installs"][0]["path"],
        client.canonicalize().unwrap().to_str().unwrap()
    );
}

#[test]
fn unknown_hash_is_modified_and_never_affected() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    edit_file(&file, |t| t + "\n// local edit\n");
    let o = sb.run(&["status", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    let out = sb.normalize(&o.stdout);
    assert!(out.contains("0.1.0-rc.8  modified  review with `mcpatch diff --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client`, then `mcpatch apply --path [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client --yes` to patch anyway"), "{out}");
    assert!(!out.contains("affected  "), "{out}");
}

#[test]
fn the_real_0_0_1_rc_1_is_unsupported() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.0.1-rc.1", "old");
    let v = status_json(&sb, &["--path", client.to_str().unwrap()]);
    assert_eq!(v["installs"][0]["sha256"], UNSUPPORTED);
    assert_eq!(v["installs"][0]["state"], "unsupported");
    assert_eq!(
        v["installs"][0]["next_step"],
        "upgrade @deepseek-ai/dsh to 0.1.0-rc.7 or later"
    );
    let o = sb.run(&["status", "--path", client.to_str().unwrap()]);
    assert_eq!(
        code(&o),
        0,
        "unsupported alone is not actionable by mcpatch"
    );
}

#[test]
fn an_onerror_routing_revision_is_upstream_fixed() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let file = client.join("lib/index.js");
    edit_file(&file, |t| {
        t.replace(
            "\t\tgeneration.setNotificationHandler(",
            "\t\tgeneration.onerror = (error) => { if (attemptSettled && error?.code === 404) generationDown(generation); };\n\t\tgeneration.setNotificationHandler(",
        )
    });
    let v = status_json(&sb, &["--path", client.to_str().unwrap()]);
    assert_eq!(v["installs"][0]["state"], "upstream-fixed");
}

#[test]
fn path_accepts_the_file_the_package_or_a_folder_above() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "projects/one");
    sb.client_install("0.1.0-rc.7", "projects/two");
    for (arg, count) in [
        (client.join("lib/index.js"), 1),
        (client.clone(), 1),
        (sb.root().join("projects/one"), 1),
        (sb.root().join("projects"), 2),
    ] {
        let v = status_json(&sb, &["--path", arg.to_str().unwrap()]);
        assert_eq!(
            v["installs"].as_array().unwrap().len(),
            count,
            "--path {}: {v:#}",
            arg.display()
        );
    }
}

#[test]
fn nothing_found_is_not_an_error_and_says_where_it_looked() {
    let sb = Sandbox::new();
    let o = sb.run(&["status"]);
    assert_eq!(code(&o), 0);
    assert_eq!(sb.normalize(&o.stdout), nothing_found());
}

/// What a search of an empty sandbox prints: where it looked, and the fix.
fn nothing_found() -> String {
    let node = node22_dir().join("node").canonicalize().unwrap();
    let prefix = node.parent().unwrap().parent().unwrap();
    format!(
        "no @deepseek-ai/dsh-mcp-client, mcp-remote, @google/gemini-cli, @modelcontextprotocol/sdk, @modelcontextprotocol/client or @ai-sdk/mcp install found; looked in:
  - `dsh` on PATH (not found)
  - `gemini` on PATH (not found)
  - the project of the current folder (no node_modules above it)
  - npm global root ({}/lib/node_modules, prefix of `node` on PATH ({}))
  - DSH_HOME profiles ([SANDBOX]/home/.dsh/profiles)
  - npx cache ([SANDBOX]/home/.npm/_npx, default cache)
  - pnpm dlx cache ([SANDBOX]/home/.cache/pnpm/dlx)
help: if DSH, mcp-remote, gemini-cli, the MCP TypeScript SDK or the app that uses @ai-sdk/mcp is installed elsewhere, pass its folder with --path
",
        prefix.display(),
        node.display()
    )
}

#[test]
fn apply_and_revert_with_nothing_found_say_where_they_looked_or_print_one_json_document() {
    let sb = Sandbox::new();
    let looked = nothing_found();
    for command in ["apply", "revert"] {
        let o = sb.run(&[command]);
        assert_eq!(code(&o), 0, "{command}: {}", stderr(&o));
        assert_eq!(sb.normalize(&o.stdout), looked, "{command}");
        assert_eq!(stderr(&o), "", "{command}");

        let o = sb.run(&[command, "--json"]);
        assert_eq!(code(&o), 0, "{command} --json: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
            panic!(
                "{command} --json: stdout is not one JSON document ({e}):\n{}",
                stdout(&o)
            )
        });
        assert_eq!(
            v["installs"],
            serde_json::json!([]),
            "{command} --json: {v:#}"
        );
        assert_eq!(v["searched"].as_array().map(Vec::len), Some(7), "{v:#}");
    }
}

#[test]
fn a_missing_path_is_an_error_that_names_it() {
    let sb = Sandbox::new();
    let missing = sb.root().join("nope");
    let o = sb.run(&["status", "--path", missing.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        sb.normalize(&o.stderr),
        "error: cannot read [SANDBOX]/nope: No such file or directory (os error 2)
help: check the --path argument: it must exist
"
    );
}

#[test]
fn locate_cost_follows_package_folders_not_files() {
    // A root with many files inside one package is visited in a bounded number of folders.
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let junk = sb.root().join("g/lib/node_modules/big-package/dist");
    std::fs::create_dir_all(&junk).unwrap();
    std::fs::write(
        junk.parent().unwrap().join("package.json"),
        r#"{"name":"big-package"}"#,
    )
    .unwrap();
    for i in 0..2000 {
        std::fs::write(junk.join(format!("f{i}.js")), "x").unwrap();
    }
    let v = status_json(&sb, &["--path", sb.root().join("g").to_str().unwrap()]);
    assert_eq!(
        v["installs"][0]["path"],
        client.canonicalize().unwrap().to_str().unwrap()
    );
}

#[test]
fn dsh_home_is_resolved_as_dsh_resolves_it() {
    let sb = Sandbox::new();
    // Default: ~/.dsh; a blank DSH_HOME is unset; `~/x` is under HOME.
    let default_home = sb.copy_client(
        "0.1.0-rc.8",
        &sb.dsh_home()
            .join("profiles/main/node_modules")
            .join(CLIENT),
    );
    for value in [None, Some("   ")] {
        let mut c = sb.cmd(&["status", "--json"]);
        match value {
            Some(v) => c.env("DSH_HOME", v),
            None => c.env_remove("DSH_HOME"),
        };
        let v: serde_json::Value = serde_json::from_slice(&c.output().unwrap().stdout).unwrap();
        assert_eq!(
            v["installs"][0]["path"],
            default_home.canonicalize().unwrap().to_str().unwrap(),
            "DSH_HOME={value:?}"
        );
    }
    let tilde = sb.copy_client(
        "0.1.0-rc.7",
        &sb.root()
            .join("home/other-dsh/profiles/p/node_modules")
            .join(CLIENT),
    );
    let o = sb
        .cmd(&["status", "--json"])
        .env("DSH_HOME", "~/other-dsh")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["installs"][0]["path"],
        tilde.canonicalize().unwrap().to_str().unwrap()
    );
}

#[test]
fn status_json_on_an_error_is_one_json_object_naming_the_error_and_where_it_looked() {
    let sb = Sandbox::new();
    let missing = sb.root().join("nope");
    let o = sb.run(&["status", "--json", "--path", missing.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    let error = "cannot read [SANDBOX]/nope: No such file or directory (os error 2)\nhelp: check the --path argument: it must exist";
    let v: serde_json::Value = serde_json::from_str(&sb.normalize(&o.stdout))
        .unwrap_or_else(|e| panic!("not one JSON object ({e}): {}", stdout(&o)));
    assert_eq!(
        v,
        serde_json::json!({
            "installs": [],
            "searched": ["--path [SANDBOX]/nope"],
            "errors": [],
            "error": error,
        })
    );
    assert_eq!(sb.normalize(&o.stderr), format!("error: {error}\n"));
    // A --path that holds no install: the places it looked.
    let empty = sb.root().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = sb.run(&["status", "--json", "--path", empty.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    let v: serde_json::Value = serde_json::from_str(&sb.normalize(&o.stdout)).unwrap();
    assert_eq!(
        v["searched"],
        serde_json::json!(["--path [SANDBOX]/empty"]),
        "{v:#}"
    );
    assert!(
        v["error"].as_str().unwrap().starts_with(
            "no @deepseek-ai/dsh-mcp-client, mcp-remote, @google/gemini-cli, @modelcontextprotocol/sdk, @modelcontextprotocol/client or @ai-sdk/mcp install under the --path given"
        ),
        "{v:#}"
    );
    // And without an error, `error` is null.
    let client = sb.client_install("0.1.0-rc.8", "g");
    let v = status_json(&sb, &["--path", client.to_str().unwrap()]);
    assert_eq!(v["error"], serde_json::Value::Null, "{v:#}");
}

#[test]
fn a_revert_with_nothing_to_restore_creates_nothing_and_status_offers_revert_only_with_a_backup() {
    let sb = Sandbox::new();
    let client = sb.client_install("0.1.0-rc.8", "g");
    let p = client.to_str().unwrap();
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sb.normalize(&o.stdout),
        "no backup of [SANDBOX]/g/lib/node_modules/@deepseek-ai/dsh-mcp-client/lib/index.js; nothing to revert\n"
    );
    assert!(
        !sb.dsh_home().join("backups").exists(),
        "a revert that restores nothing created {}",
        sb.dsh_home().join("backups").display()
    );

    // Patched with another DSH_HOME: this one holds no backup to undo it with.
    let o = sb
        .cmd(&["apply", "--path", p])
        .env("DSH_HOME", sb.root().join("other-home"))
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = status_json(&sb, &["--path", p]);
    assert_eq!(
        v["installs"][0]["next_step"],
        "none (`mcpatch verify` to check; mcpatch holds no backup of it to revert to)"
    );
    let o = sb.run(&["revert", "--path", p]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(!sb.dsh_home().join("backups").exists());
    // With its backup there, revert is offered.
    let o = sb
        .cmd(&["status", "--json", "--path", p])
        .env("DSH_HOME", sb.root().join("other-home"))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["installs"][0]["next_step"],
        "none (`mcpatch verify` to check, `mcpatch revert` to undo)"
    );
}
