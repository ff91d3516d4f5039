//! Keeping the patch in a project across `npm install` and `npm ci`
//! (`mcpatch keep`, docs/keeping-the-patch.md): a project set up the way the
//! docs say keeps the patch across `rm -rf node_modules && npm ci`, run by the
//! real npm from a real lockfile with @modelcontextprotocol/sdk 1.32.2 and the
//! real patch-package (test-fixtures/keeping/fetch.sh puts them and an npm
//! cache in .cache/keeping/, so `npm ci --offline` needs no network); and
//! `status` says when nothing in the project keeps a patched copy.

use serde_json::Value;

use super::mcp_sdk::cp;
use super::*;

const SDK: &str = "@modelcontextprotocol/sdk";
const ESM: &str = "dist/esm/client/streamableHttp.js";
const CJS: &str = "dist/cjs/client/streamableHttp.js";
const NOTE: &str = "    keep: `npm install` or `npm ci` undoes it; see `mcpatch keep --help`\n";

/// .cache/keeping/ from test-fixtures/keeping/fetch.sh.
fn fetched_keeping() -> PathBuf {
    let p = cache().join("keeping");
    assert!(
        p.join(".done").is_file(),
        "the real npm project and npm cache are missing from {}: run test-fixtures/keeping/fetch.sh (needs npm and the npm registry)",
        p.display()
    );
    p
}

/// A project folder in the sandbox holding the fixture's package.json and
/// package-lock.json (no node_modules yet); canonical.
fn new_project(sb: &Sandbox) -> PathBuf {
    let dest = sb.root().join("my-agent");
    std::fs::create_dir_all(&dest).unwrap();
    for f in ["package.json", "package-lock.json"] {
        std::fs::copy(fetched_keeping().join("project").join(f), dest.join(f)).unwrap();
    }
    dest.canonicalize().unwrap()
}

/// `npm ci --offline` in `project` by the real npm, from a private copy of the
/// fetched npm cache, with the sandbox's PATH: the mcpatch under test (linked
/// into the sandbox's bin/) and node 22 come first, as a CI job puts them.
fn npm_ci(sb: &Sandbox, project: &Path) -> Output {
    let npm = which::which("npm").unwrap_or_else(|_| {
        panic!("npm is not on PATH; install Node.js and npm (apt-get install nodejs npm)")
    });
    let link = sb.root().join("bin/mcpatch");
    if !link.exists() {
        std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("mcpatch"), &link).unwrap();
    }
    let npm_cache = sb.root().join("npm-cache");
    if !npm_cache.exists() {
        cp(&["-a"], &fetched_keeping().join("npm-cache"), &npm_cache);
    }
    let base = sb.command(&[]);
    let mut c = std::process::Command::new(&npm);
    for (k, v) in base.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let path = std::env::join_paths([
        sb.root().join("bin"),
        node22_dir(),
        npm.parent().unwrap().to_path_buf(),
    ])
    .unwrap();
    c.env("PATH", path)
        .current_dir(project)
        .args([
            "ci",
            "--offline",
            "--no-audit",
            "--no-fund",
            "--no-update-notifier",
        ])
        .arg("--cache")
        .arg(&npm_cache);
    let o = output_within(c, std::time::Duration::from_secs(300), "npm ci --offline");
    assert_eq!(code(&o), 0, "npm ci failed:\n{}{}", stdout(&o), stderr(&o));
    o
}

fn sdk_hashes(project: &Path) -> [String; 2] {
    let sdk = project.join("node_modules").join(SDK);
    [sha256_file(&sdk.join(ESM)), sha256_file(&sdk.join(CJS))]
}

/// The project's one SDK install in `status --json --path P`.
fn sdk_status(sb: &Sandbox, project: &Path) -> Value {
    let v = status_json(sb, &["--path", project.to_str().unwrap()]);
    let found: Vec<&Value> = v["installs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["target"] == "mcp-sdk")
        .collect();
    assert_eq!(found.len(), 1, "{v:#}");
    found[0].clone()
}

/// `mcpatch apply --path P`; returns the patched builds' sha256.
fn apply(sb: &Sandbox, project: &Path) -> [String; 2] {
    let o = sb.run(&["apply", "--quiet", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let i = sdk_status(sb, project);
    assert_eq!(i["state"], "patched", "{i:#}");
    sdk_hashes(project)
}

#[test]
fn a_project_kept_by_its_postinstall_is_patched_again_after_rm_rf_node_modules_and_npm_ci() {
    let sb = Sandbox::new();
    let project = new_project(&sb);
    let p = project.to_str().unwrap();
    npm_ci(&sb, &project);
    let original = sdk_hashes(&project);
    let patched = apply(&sb, &project);
    assert_ne!(patched, original);

    let o = sb.run(&["keep", "postinstall", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("{p}/package.json: scripts.postinstall now runs `mcpatch apply --quiet --path .`\nnext: commit package.json; every `npm install` and `npm ci` then runs mcpatch, which must be on PATH there (docs/keeping-the-patch.md)\n")
    );

    std::fs::remove_dir_all(project.join("node_modules")).unwrap();
    let o = npm_ci(&sb, &project);
    assert!(
        stdout(&o).contains(&format!(
            "> mcpatch apply --quiet --path .\n\npatched {p}/node_modules/{SDK} (1.32.2): backup "
        )),
        "npm ci did not run mcpatch's postinstall:\n{}",
        stdout(&o)
    );
    assert_eq!(
        sdk_hashes(&project),
        patched,
        "the SDK copy npm ci put back is not the patched one"
    );
    let i = sdk_status(&sb, &project);
    assert_eq!(i["state"], "patched", "{i:#}");
    assert_eq!(i["companions"][0]["state"], "patched", "{i:#}");
    assert_eq!(i["kept_by"], "postinstall", "{i:#}");
}

#[test]
fn a_project_kept_by_patch_package_is_patched_again_after_rm_rf_node_modules_and_npm_ci() {
    let sb = Sandbox::new();
    let project = new_project(&sb);
    let p = project.to_str().unwrap();
    npm_ci(&sb, &project);
    let patched = apply(&sb, &project);

    let o = sb.run(&["keep", "patch-package", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let file = format!("{p}/patches/@modelcontextprotocol+sdk+1.32.2.patch");
    assert_eq!(
        stdout(&o),
        format!("{file}: written\n{p}/package.json: scripts.postinstall now runs `patch-package`\nnext: commit patches/ and package.json (and the lockfile); every `npm install` and `npm ci` then applies the patch (docs/keeping-the-patch.md)\n")
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let esm = format!("a/node_modules/{SDK}/{ESM}");
    assert!(
        text.starts_with(&format!("diff --git {esm} b/node_modules/{SDK}/{ESM}\n--- {esm}\n+++ b/node_modules/{SDK}/{ESM}\n@@ ")),
        "{text}"
    );
    assert!(
        text.contains(&format!("diff --git a/node_modules/{SDK}/{CJS} ")),
        "{text}"
    );

    // package.json's postinstall is patch-package alone: mcpatch takes no part.
    std::fs::remove_dir_all(project.join("node_modules")).unwrap();
    let o = npm_ci(&sb, &project);
    assert!(
        stdout(&o).contains("> patch-package\n") && stdout(&o).contains(&format!("{SDK}@1.32.2 ✔")),
        "npm ci did not run patch-package:\n{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("mcpatch apply"), "{}", stdout(&o));
    assert_eq!(
        sdk_hashes(&project),
        patched,
        "patch-package did not put the patched builds back"
    );
    let i = sdk_status(&sb, &project);
    assert_eq!(i["state"], "patched", "{i:#}");
    assert_eq!(i["kept_by"], "patch-package", "{i:#}");
}

/// A copy of the real project .cache/mcp-sdk/projects/sdk-1.32.2 (from
/// test-fixtures/mcp-sdk/fetch.sh) with its package.json and the SDK's two
/// builds files of their own; canonical.
fn sdk_project(sb: &Sandbox) -> PathBuf {
    let src = cache().join("mcp-sdk/projects/sdk-1.32.2");
    assert!(
        src.join(".done").is_file(),
        "the real npm project sdk-1.32.2 is missing from {}: run test-fixtures/mcp-sdk/fetch.sh (needs npm and the npm registry)",
        src.display()
    );
    let dest = sb.root().join("my-agent");
    cp(&["-al"], &src, &dest);
    let sdk = dest.join("node_modules").join(SDK);
    for f in [dest.join("package.json"), sdk.join(ESM), sdk.join(CJS)] {
        let bytes = std::fs::read(&f).unwrap();
        std::fs::remove_file(&f).unwrap();
        std::fs::write(&f, bytes).unwrap();
    }
    dest.canonicalize().unwrap()
}

/// The text `status --path P` prints.
fn status_text(sb: &Sandbox, project: &Path) -> String {
    let o = sb.run(&["status", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    stdout(&o)
}

#[test]
fn status_notes_a_patched_copy_its_project_does_not_keep_and_not_once_kept() {
    let sb = Sandbox::new();
    let project = sdk_project(&sb);
    let p = project.to_str().unwrap();
    let i = sdk_status(&sb, &project);
    assert_eq!(i["state"], "affected", "{i:#}");
    assert_eq!(i["kept_by"], Value::Null, "{i:#}");
    apply(&sb, &project);

    let text = status_text(&sb, &project);
    assert!(
        text.contains(&format!("    via mcpatch-fixture (the project)\n    note: the session-loss patch applied to {SDK} 1.32.0 (esm)\n{NOTE}1 install(s): ")),
        "{text}"
    );
    let i = sdk_status(&sb, &project);
    assert_eq!(i["kept_by"], Value::Null, "{i:#}");
    assert!(i.as_object().unwrap().contains_key("kept_by"), "{i:#}");

    let o = sb.run(&["keep", "postinstall", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let text = status_text(&sb, &project);
    assert!(!text.contains("keep:"), "{text}");
    assert_eq!(sdk_status(&sb, &project)["kept_by"], "postinstall");
}

/// .cache/keeping-pnpm/ from test-fixtures/keeping/fetch.sh: pnpm itself, a
/// project with its pnpm-lock.yaml, and a store that installs it offline.
fn fetched_pnpm() -> PathBuf {
    let p = cache().join("keeping-pnpm");
    assert!(
        p.join(".done").is_file(),
        "pnpm and its project and store are missing from {}: run test-fixtures/keeping/fetch.sh (needs npm and the npm registry)",
        p.display()
    );
    p
}

/// `pnpm install --offline ARGS` in `project` by the real pnpm, from a
/// private copy of the fetched store and metadata cache, with node 22 first on PATH.
fn pnpm_install(sb: &Sandbox, project: &Path, args: &[&str]) -> Output {
    let store = sb.root().join("pnpm-store");
    let metadata = sb.root().join("pnpm-cache");
    if !store.exists() {
        cp(&["-a"], &fetched_pnpm().join("store"), &store);
        cp(&["-a"], &fetched_pnpm().join("pnpm-cache"), &metadata);
    }
    let base = sb.command(&[]);
    let mut c = std::process::Command::new(fetched_pnpm().join("tool/node_modules/.bin/pnpm"));
    for (k, v) in base.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    // CI: pnpm rebuilds node_modules for a changed patch without asking.
    c.env("CI", "true")
        .current_dir(project)
        .args(["install", "--offline"])
        .args(args)
        .arg("--store-dir")
        .arg(&store)
        .arg("--cache-dir")
        .arg(&metadata);
    let o = output_within(
        c,
        std::time::Duration::from_secs(300),
        "pnpm install --offline",
    );
    assert_eq!(
        code(&o),
        0,
        "pnpm install failed:\n{}{}",
        stdout(&o),
        stderr(&o)
    );
    o
}

/// The SDK copy's folder and its two builds' sha256, as status finds it.
fn pnpm_sdk(sb: &Sandbox, project: &Path) -> (Value, [String; 2]) {
    let i = sdk_status(sb, project);
    let dir = PathBuf::from(i["path"].as_str().unwrap());
    (
        i,
        [sha256_file(&dir.join(ESM)), sha256_file(&dir.join(CJS))],
    )
}

#[test]
fn a_pnpm_project_kept_by_patched_dependencies_is_patched_again_after_rm_rf_node_modules_and_pnpm_install(
) {
    let sb = Sandbox::new();
    let project = sb.root().join("my-agent");
    std::fs::create_dir_all(&project).unwrap();
    for f in ["package.json", "pnpm-lock.yaml"] {
        std::fs::copy(fetched_pnpm().join("project").join(f), project.join(f)).unwrap();
    }
    let project = project.canonicalize().unwrap();
    let p = project.to_str().unwrap();
    pnpm_install(&sb, &project, &["--frozen-lockfile"]);
    let o = sb.run(&["apply", "--quiet", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let (i, patched) = pnpm_sdk(&sb, &project);
    assert_eq!(i["state"], "patched", "{i:#}");
    assert_eq!(i["kept_by"], Value::Null, "{i:#}");

    let o = sb.run(&["keep", "pnpm", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let file = "patches/@modelcontextprotocol__sdk@1.32.2.patch";
    assert_eq!(
        stdout(&o),
        format!("{p}/{file}: written\n{p}/pnpm-workspace.yaml: patchedDependencies now names {file} for {SDK}@1.32.2\nnext: run `pnpm install` (it records the patch in pnpm-lock.yaml), then commit patches/, pnpm-workspace.yaml and pnpm-lock.yaml (docs/keeping-the-patch.md)\n")
    );
    assert_eq!(
        std::fs::read_to_string(project.join("pnpm-workspace.yaml")).unwrap(),
        format!("patchedDependencies:\n  '{SDK}@1.32.2': {file}\n")
    );
    let text = std::fs::read_to_string(project.join(file)).unwrap();
    assert!(
        text.starts_with(&format!(
            "diff --git a/{ESM} b/{ESM}\n--- a/{ESM}\n+++ b/{ESM}\n@@ "
        )),
        "{text}"
    );
    assert_eq!(sdk_status(&sb, &project)["kept_by"], "pnpm");

    // pnpm records the patch in its lockfile; then a clean install from it.
    pnpm_install(&sb, &project, &["--no-frozen-lockfile"]);
    let lock = std::fs::read_to_string(project.join("pnpm-lock.yaml")).unwrap();
    assert!(lock.contains("patchedDependencies:"), "{lock}");
    std::fs::remove_dir_all(project.join("node_modules")).unwrap();
    pnpm_install(&sb, &project, &["--frozen-lockfile"]);
    let (i, hashes) = pnpm_sdk(&sb, &project);
    assert!(
        i["path"].as_str().unwrap().contains("_patch_hash="),
        "pnpm did not patch it: {i:#}"
    );
    assert_eq!(hashes, patched, "pnpm's patched copy is not mcpatch's");
    assert_eq!(i["state"], "patched", "{i:#}");
    assert_eq!(i["kept_by"], "pnpm", "{i:#}");

    // Run again: nothing to change.
    let o = sb.run(&["keep", "pnpm", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("{}: already kept by pnpm\n", i["path"].as_str().unwrap())
    );
}

#[test]
fn keep_postinstall_chains_the_script_there_and_keeps_the_files_layout_and_mode() {
    let sb = Sandbox::new();
    let project = sb.root().join("app");
    std::fs::create_dir_all(&project).unwrap();
    let before = "{\r\n\t\"name\": \"app\",\r\n\t\"scripts\": {\r\n\t\t\"postinstall\": \"husky install\",\r\n\t\t\"test\": \"node --test\"\r\n\t},\r\n\t\"dependencies\": {}\r\n}\r\n";
    let manifest = project.join("package.json");
    std::fs::write(&manifest, before).unwrap();
    std::fs::set_permissions(&manifest, std::fs::Permissions::from_mode(0o640)).unwrap();
    let o = sb.run(&["keep", "postinstall", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&manifest).unwrap(),
        before.replace(
            "\"husky install\"",
            "\"husky install && mcpatch apply --quiet --path .\""
        )
    );
    assert_eq!(
        std::fs::metadata(&manifest).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    let leftovers: Vec<_> = std::fs::read_dir(&project)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("package.json")]);

    // No postinstall yet: it goes last in scripts, indented and ended as the file is.
    let before =
        "{\n\t\"name\": \"app\",\n\t\"scripts\": {\n\t\t\"test\": \"node --test\"\n\t}\n}\n";
    std::fs::write(&manifest, before).unwrap();
    let o = sb.run(&["keep", "postinstall", "--path", project.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&manifest).unwrap(),
        "{\n\t\"name\": \"app\",\n\t\"scripts\": {\n\t\t\"test\": \"node --test\",\n\t\t\"postinstall\": \"mcpatch apply --quiet --path .\"\n\t}\n}\n"
    );
}

#[test]
fn keep_refuses_what_it_cannot_do_and_changes_nothing() {
    let sb = Sandbox::new();
    let project = sdk_project(&sb);
    let p = project.to_str().unwrap();
    let manifest = project.join("package.json");
    let before = std::fs::read(&manifest).unwrap();

    // patch-package writes the change apply made: an unpatched copy has none.
    let o = sb.run(&["keep", "patch-package", "--path", p]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("error: {p}/node_modules/{SDK} is affected, not patched: `mcpatch keep` writes the change `mcpatch apply` made\nhelp: nothing was changed; run `mcpatch apply --path {p}` first, then this command again\n")
    );
    assert!(!project.join("patches").exists());

    // A package.json that is a link is not written through.
    let elsewhere = sb.root().join("elsewhere.json");
    std::fs::rename(&manifest, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &manifest).unwrap();
    let o = sb.run(&["keep", "postinstall", "--path", p]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("error: cannot edit {p}/package.json: it is a symbolic link; mcpatch writes no file through a link\nhelp: nothing was changed; fix the file (npm reads it too), or make the change by hand as docs/keeping-the-patch.md shows\n")
    );
    assert_eq!(std::fs::read(&elsewhere).unwrap(), before);

    // Not JSON: named, and left as it was.
    std::fs::remove_file(&manifest).unwrap();
    std::fs::write(&manifest, "{\"name\": ").unwrap();
    let o = sb.run(&["keep", "postinstall", "--path", p]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).starts_with(&format!(
            "error: cannot edit {p}/package.json: it is not JSON ("
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&manifest).unwrap(), b"{\"name\": ");

    // No package.json at all.
    let o = sb.run(&["keep", "postinstall", "--path", sb.root().to_str().unwrap()]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    let root = sb.root().canonicalize().unwrap();
    assert_eq!(
        stderr(&o),
        format!("error: {} is no project folder: it holds no package.json\nhelp: pass --path the project folder (the one with package.json and node_modules)\n", root.display())
    );
}

#[test]
fn a_patched_dsh_plugin_in_a_profile_with_a_package_json_gets_no_keep_note() {
    // Only libraries projects depend on (the SDK targets) are kept by a
    // project's install; DSH reinstalls its own plugins.
    let sb = Sandbox::new();
    let client = sb.pnpm_profile("0.1.0-rc.8", "default");
    let profile = sb.dsh_home().join("profiles/default");
    std::fs::write(profile.join("package.json"), "{\"dependencies\":{}}").unwrap();
    let o = sb.run(&["apply", "--quiet", "--path", client.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let v = status_json(&sb, &["--path", profile.to_str().unwrap()]);
    let i = &v["installs"][0];
    assert_eq!(i["state"], "patched", "{v:#}");
    assert!(!i.as_object().unwrap().contains_key("kept_by"), "{i:#}");
    let o = sb.run(&["status", "--path", profile.to_str().unwrap()]);
    assert!(!stdout(&o).contains("keep:"), "{}", stdout(&o));
}

#[test]
fn as_root_keep_leaves_the_files_it_writes_to_the_projects_owner() {
    super::harden::require_root("only root can give package.json to another uid");
    const OWNER: u32 = 4_242_425;
    let sb = Sandbox::new();
    let project = sdk_project(&sb);
    let p = project.to_str().unwrap();
    apply(&sb, &project);
    let manifest = project.join("package.json");
    std::fs::set_permissions(&manifest, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::os::unix::fs::lchown(&manifest, Some(OWNER), Some(OWNER)).unwrap();
    let o = sb.run(&["keep", "patch-package", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    for (path, mode) in [
        (manifest.clone(), 0o640),
        (project.join("patches"), 0o755),
        (
            project.join("patches/@modelcontextprotocol+sdk+1.32.2.patch"),
            0o640,
        ),
    ] {
        let m = std::fs::metadata(&path).unwrap();
        assert_eq!((m.uid(), m.gid()), (OWNER, OWNER), "{}", path.display());
        assert_eq!(
            m.permissions().mode() & 0o7777 & !0o022,
            mode & !0o022,
            "{}",
            path.display()
        );
    }
}

#[test]
fn the_real_patch_package_applies_the_patch_files_of_a_nested_and_a_hoisted_sdk_copy() {
    let sb = Sandbox::new();
    // patch-package itself, installed by npm from the fixture's lockfile.
    let tool = new_project(&sb);
    npm_ci(&sb, &tool);
    // The real LangChain project, its SDK 1.32.2 hoisted, and an SDK 1.17.0
    // nested under @langchain/mcp-adapters, as npm lays out a second version.
    let src = cache().join("mcp-sdk/projects/langchain-1.1.4");
    let pack = cache().join("mcp-sdk/packs/@modelcontextprotocol/sdk@1.17.0");
    for p in [&src, &pack] {
        assert!(
            p.join(".done").is_file(),
            "{} is missing: run test-fixtures/mcp-sdk/fetch.sh (needs npm and the npm registry)",
            p.display()
        );
    }
    let project = sb.root().join("lc");
    cp(&["-al"], &src, &project);
    let hoisted = project.join("node_modules").join(SDK);
    let nested = project
        .join("node_modules/@langchain/mcp-adapters/node_modules")
        .join(SDK);
    cp(&["-a"], &pack.join("package"), &nested);
    for f in [
        project.join("package.json"),
        hoisted.join(ESM),
        hoisted.join(CJS),
    ] {
        let bytes = std::fs::read(&f).unwrap();
        std::fs::remove_file(&f).unwrap();
        std::fs::write(&f, bytes).unwrap();
    }
    let project = project.canonicalize().unwrap();
    let p = project.to_str().unwrap();
    let builds = || {
        [&nested, &hoisted]
            .iter()
            .flat_map(|d| [sha256_file(&d.join(ESM)), sha256_file(&d.join(CJS))])
            .collect::<Vec<_>>()
    };
    let original = builds();

    let o = sb.run(&["apply", "--quiet", "--target", "mcp-sdk", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let patched = builds();
    assert!(patched.iter().zip(&original).all(|(a, b)| a != b));
    let o = sb.run(&["keep", "patch-package", "--target", "mcp-sdk", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).starts_with(&format!("{p}/patches/@langchain+mcp-adapters++@modelcontextprotocol+sdk+1.17.0.patch: written\n{p}/patches/@modelcontextprotocol+sdk+1.32.2.patch: written\n")),
        "{}",
        stdout(&o)
    );

    // Back to the originals, then patch-package alone puts the patch on.
    let o = sb.run(&["revert", "--target", "mcp-sdk", "--path", p]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(builds(), original);
    let mut c = std::process::Command::new(node22_dir().join("node"));
    c.arg(tool.join("node_modules/patch-package/index.js"))
        .current_dir(&project)
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0");
    let o = output_within(c, std::time::Duration::from_secs(120), "patch-package");
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(&format!("@langchain/mcp-adapters/{SDK}@1.17.0 ✔"))
            && stdout(&o).contains(&format!("{SDK}@1.32.2 ✔")),
        "{}",
        stdout(&o)
    );
    assert_eq!(
        builds(),
        patched,
        "patch-package's copies are not mcpatch's"
    );
}
