//! `mcpatch verify` and `mcpatch serve`: prove, offline and in seconds, that an
//! installed client heals itself when a server drops its session — the real
//! installed file, the real MCP SDK, real node, a real HTTP server.

pub mod harness;
pub mod scenario;
pub mod server;

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use crate::backup;
use crate::classify::{Install, State};
use crate::error::{Error, Result};
use crate::exit_code::Outcome;
use crate::locate::Environment;
use crate::node::{self, Node};
use crate::registry::PatchSpec;
use crate::status;
use crate::table::{Align, Table};
use harness::Policy;
use scenario::{Expectation, Scenario};
use server::FakeServer;

/// Options of `mcpatch verify`.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    pub paths: Vec<PathBuf>,
    /// `Some("")`: the newest backup; `Some(id)`: that one.
    pub backup: Option<String>,
    pub scenarios: Vec<String>,
    pub node: Option<PathBuf>,
    pub json: bool,
}

/// One scenario's result, as `verify --json` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    pub name: &'static str,
    /// The reconnect policy the client ran with: short (100 ms first backoff) or default (the package's own).
    pub policy: &'static str,
    pub expected: Expectation,
    /// verdict, ok, recovery_ms, initialize_count, trigger_error, note.
    #[serde(flatten)]
    pub judgement: scenario::Judgement,
    pub node_version: String,
}

/// One install's results.
#[derive(Debug, Clone, Serialize)]
pub struct InstallResult {
    pub path: PathBuf,
    /// The file that was loaded (the install's, or a backup's).
    pub file: PathBuf,
    pub backup: Option<String>,
    pub sha256: String,
    pub state: State,
    pub node_version: String,
    /// Whether the harness had to add Promise.withResolvers (Node < 22).
    pub node_shim: bool,
    /// RECOVERED when every scenario met its expectation, else STUCK.
    pub overall: &'static str,
    pub scenarios: Vec<ScenarioResult>,
}

#[derive(Debug, Serialize)]
struct VerifyReport {
    installs: Vec<InstallResult>,
}

fn select(names: &[String]) -> Result<Vec<Scenario>> {
    let all = scenario::all();
    if names.is_empty() {
        return Ok(all);
    }
    names
        .iter()
        .map(|n| {
            all.iter()
                .find(|s| s.name == n)
                .cloned()
                .ok_or_else(|| Error::UnknownScenario {
                    name: n.clone(),
                    known: scenario::names().join(", "),
                })
        })
        .collect()
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            Error::io(
                "start",
                "the async runtime",
                e,
                "check the machine's thread limits",
            )
        })
}

pub fn run(spec: &PatchSpec, opts: &VerifyOptions, env: &Environment) -> Result<Outcome> {
    let scenarios = select(&opts.scenarios)?;
    let report = status::collect(spec, &opts.paths, env)?;
    if report.installs.is_empty() {
        print!("{}", status::render_table(&report));
        return Ok(Outcome::Clean);
    }
    let node = node::find(opts.node.as_deref())?;
    if !opts.json {
        eprintln!("node {} ({})", node.version, node.path.display());
        if !node.has_with_resolvers {
            eprintln!(
                "note: node {} lacks Promise.withResolvers (the host needs Node >= 22); the harness adds a spec-equivalent shim",
                node.version
            );
        }
    }
    let rt = runtime()?;
    let mut results = Vec::new();
    let mut outcome = Outcome::Clean;
    for install in &report.installs {
        if install.state == State::Unsupported {
            if !opts.json {
                println!(
                    "skipped {}: unsupported (no reconnect supervisor)",
                    install.path.display()
                );
            }
            outcome = Outcome::Attention;
            continue;
        }
        let target = Target::for_install(spec, install, opts.backup.as_deref(), env)?;
        let result = rt.block_on(verify_install(
            &node, install, &target, &scenarios, opts.json,
        ))?;
        if result.overall != "RECOVERED" {
            outcome = Outcome::Attention;
        }
        if !opts.json {
            print!("{}", render(&result));
        }
        results.push(result);
    }
    if opts.json {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&VerifyReport { installs: results })
                .expect("report serializes")
        );
    }
    Ok(outcome)
}

/// The file a verify run loads: the install's own, or a backup copied next to it
/// (so its imports resolve from the install) and removed afterwards.
struct Target {
    file: PathBuf,
    backup: Option<String>,
    sha256: String,
    _temp: Option<tempfile::TempPath>,
}

impl Target {
    fn for_install(
        spec: &PatchSpec,
        install: &Install,
        backup_id: Option<&str>,
        env: &Environment,
    ) -> Result<Target> {
        let Some(wanted) = backup_id else {
            return Ok(Target {
                file: install.file.clone(),
                backup: None,
                sha256: install.sha256.clone(),
                _temp: None,
            });
        };
        let root = backup::root(&env.dsh_home()?, spec);
        let backups = backup::list(&root)?;
        let chosen = backup::pick(
            &backups,
            &install.file,
            (!wanted.is_empty()).then_some(wanted),
        )
        .ok_or_else(|| Error::BackupNotFound {
            id: if wanted.is_empty() {
                format!("(newest of {})", install.file.display())
            } else {
                wanted.to_string()
            },
            dir: root.clone(),
        })?;
        let bytes = backup::read_checked(chosen, spec)?;
        let mut temp = crate::replace::temp_beside(&install.file, ".mcpatch-verify-")?;
        temp.write_all(&bytes)
            .map_err(|e| Error::io("write", temp.path(), e, "check free space on that disk"))?;
        let temp = temp.into_temp_path();
        Ok(Target {
            file: temp.to_path_buf(),
            backup: Some(chosen.id.clone()),
            sha256: chosen.manifest.sha256_before.clone(),
            _temp: Some(temp),
        })
    }
}

async fn verify_install(
    node: &Node,
    install: &Install,
    target: &Target,
    scenarios: &[Scenario],
    quiet: bool,
) -> Result<InstallResult> {
    let mut runs: Vec<(&Scenario, Policy)> = scenarios.iter().map(|s| (s, Policy::Short)).collect();
    if let Some(first) = scenarios.iter().find(|s| s.name == "expired-404") {
        runs.push((first, Policy::Default));
    }
    let mut results = Vec::new();
    let mut node_version = node.version.clone();
    let mut shim = !node.has_with_resolvers;
    let total = runs.len();
    for (i, (scenario, policy)) in runs.into_iter().enumerate() {
        if !quiet {
            eprint!(
                "[{}/{total}] {} ({} policy) ... ",
                i + 1,
                scenario.name,
                policy.as_str()
            );
        }
        let server = FakeServer::start(scenario.behaviour.clone(), 0).await?;
        let run = harness::run(node, &target.file, &server.url(), scenario.plan, policy).await?;
        if let Some(v) = &run.node_version {
            node_version = v.clone();
        }
        shim |= run.shim;
        let judged = scenario::judge(
            scenario,
            &server.witness(),
            &server.dropped_sessions(),
            &run.calls,
            policy.deadline(),
        );
        if !quiet {
            eprintln!("{}", judged.verdict);
        }
        drop(server);
        results.push(ScenarioResult {
            name: scenario.name,
            policy: policy.as_str(),
            expected: scenario.expect,
            judgement: judged,
            node_version: node_version.clone(),
        });
    }
    let overall = if results.iter().all(|r| r.judgement.ok) {
        "RECOVERED"
    } else {
        "STUCK"
    };
    Ok(InstallResult {
        path: install.path.clone(),
        file: target.file.clone(),
        backup: target.backup.clone(),
        sha256: target.sha256.clone(),
        state: install.state,
        node_version,
        node_shim: shim,
        overall,
        scenarios: results,
    })
}

fn render(r: &InstallResult) -> String {
    let mut s = String::new();
    let what = match &r.backup {
        Some(id) => format!("{} (backup {id}, the control)", r.path.display()),
        None => format!("{} ({})", r.path.display(), r.state.as_str()),
    };
    s.push_str(&format!(
        "{what}\n    sha256 {}, node {}{}\n",
        status::short_hash(&r.sha256),
        r.node_version,
        if r.node_shim {
            " with Promise.withResolvers shim"
        } else {
            ""
        }
    ));
    let mut table = Table::new(
        &["SCENARIO", "VERDICT", "RECOVERY MS", "HANDSHAKES", "NOTE"],
        &[
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Left,
        ],
    );
    for x in &r.scenarios {
        let name = if x.policy == "default" {
            format!("{} (default policy)", x.name)
        } else {
            x.name.to_string()
        };
        let j = &x.judgement;
        let verdict = if j.ok {
            j.verdict.to_string()
        } else {
            let expected = match x.expected {
                Expectation::Recover => "RECOVERED",
                Expectation::Hold => "HELD",
            };
            format!("{} (expected {expected})", j.verdict)
        };
        table.row(vec![
            name,
            verdict,
            j.recovery_ms
                .map(|m| m.to_string())
                .unwrap_or_else(|| "-".into()),
            j.initialize_count.to_string(),
            j.note.clone(),
        ]);
    }
    s.push_str(&table.lines().concat());
    s.push_str(r.overall);
    s.push('\n');
    s
}

/// `mcpatch serve`: the fake server alone, with sessions dropped by a key press or a control request.
pub fn serve(scenario_name: &str, port: u16) -> Result<Outcome> {
    let chosen = select(&[scenario_name.to_string()])?.remove(0);
    let rt = runtime()?;
    rt.block_on(async move {
        let server = FakeServer::start(chosen.behaviour.clone(), port).await?;
        let base = format!("http://{}", server.addr());
        println!("mcpatch fake MCP server ({}: {})", chosen.name, chosen.what);
        println!("  MCP endpoint:  {}", server.url());
        println!("  drop sessions: press Enter, or  curl -X POST {base}/control/invalidate");
        println!("  restart:       type r + Enter, or  curl -X POST {base}/control/restart");
        println!("  witness log:   curl {base}/control/witness");
        println!("  quit:          Ctrl-C");
        let _ = std::io::stdout().flush();
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(tokio::io::stdin()));
        let mut stdin_open = true;
        let mut seen = 0;
        loop {
            tokio::select! {
                line = lines.next_line(), if stdin_open => match line {
                    Ok(Some(l)) if l.trim() == "r" => { server.restart(); println!("restarting on {}", server.addr()); }
                    Ok(Some(_)) => { server.invalidate(); println!("dropped every session"); }
                    _ => stdin_open = false,
                },
                _ = tokio::signal::ctrl_c() => break,
                _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {}
            }
            let w = server.witness();
            for e in &w[seen..] {
                match &e.note {
                    Some(n) => println!("{:>7} ms  {n}", e.t_ms),
                    None => println!(
                        "{:>7} ms  {} {} session={} -> {}{}",
                        e.t_ms,
                        e.http_method,
                        e.rpc_method.as_deref().unwrap_or("-"),
                        e.session_sent.as_deref().unwrap_or("-"),
                        e.status,
                        e.session_issued.as_deref().map(|s| format!(" (new session {s})")).unwrap_or_default()
                    ),
                }
            }
            seen = w.len();
            let _ = std::io::stdout().flush();
        }
        Ok(Outcome::Clean)
    })
}
