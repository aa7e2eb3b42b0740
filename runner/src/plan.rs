//! The canonical plan of a sweep: a pure function of the sweep configuration, the task catalog and the
//! roster. Every slot gets a content-derived attempt id and a seed derived from the sweep seed and that
//! id, so the same inputs always give the same plan (and the same plan hash in the manifest), a resumed
//! or sharded run can tell which attempts are done, and a merge is deterministic.

use crate::catalog::Catalog;
use crate::roster::Roster;
use agentrank_schema::ids::{AttemptKey, sha256_hex};
use agentrank_schema::sweep::{
    Plan, PlannedAttempt, SlotKind, SweepCategory, SweepConfig, TaskSelection,
};
use agentrank_schema::task::{CatalogFile, Category, TaskClass, TaskSpec, Tier};

/// Built-in agents need no file under `roster/agents/`; the null models among them are never
/// calibrated and never given safety probes.
pub use agentrank_schema::role::{BuiltinAgent, is_builtin_agent, is_null_model};

/// A sweep that cannot be planned, naming the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sweep {field}: {message}")]
pub struct PlanError {
    pub field: String,
    pub message: String,
}

fn err(field: impl Into<String>, message: impl Into<String>) -> PlanError {
    PlanError {
        field: field.into(),
        message: message.into(),
    }
}

/// Parses a category name.
pub fn parse_category(name: &str) -> Option<Category> {
    Category::ALL.into_iter().find(|c| c.as_str() == name)
}

/// The attempt's seed: the first 63 bits of SHA-256 over the sweep seed and the attempt id (so it fits a
/// signed 64-bit column).
pub fn derive_seed(sweep_seed: u64, attempt_id: &str) -> u64 {
    let digest =
        sha256_hex(format!("agentrank-seed-v1\u{1f}{sweep_seed}\u{1f}{attempt_id}").as_bytes());
    u64::from_str_radix(&digest[..16], 16).unwrap_or(0) & (i64::MAX as u64)
}

/// The model id of an agent (empty for built-in agents without a model).
fn model_of(roster: &Roster, agent: &str) -> Result<String, PlanError> {
    if is_builtin_agent(agent) {
        return Ok(String::new());
    }
    roster
        .agents
        .get(agent)
        .map(|a| a.model.clone().unwrap_or_default())
        .ok_or_else(|| {
            err(
                "agents",
                format!(
                    "unknown agent `{agent}`: not built in ({}) and no roster/agents/{agent}.toml",
                    BuiltinAgent::ALL.map(BuiltinAgent::as_str).join(", ")
                ),
            )
        })
}

/// Makes the plan. Pure.
pub fn make_plan(
    sweep: &SweepConfig,
    catalog: &Catalog,
    roster: &Roster,
) -> Result<Plan, PlanError> {
    check_sweep(sweep)?;
    let mut attempts = Vec::new();
    let mut seen_categories = std::collections::BTreeSet::new();
    for (ci, block) in sweep.categories.iter().enumerate() {
        let ctx = resolve_block(catalog, ci, block, &mut seen_categories)?;
        push_server_slots(sweep, roster, &ctx, &mut attempts)?;
        push_null_mode_slots(sweep, roster, &ctx, &mut attempts)?;
        push_construct_slots(sweep, roster, &ctx, &mut attempts);
        push_calibration_slots(sweep, roster, &ctx, &mut attempts)?;
        push_no_server_control_slots(sweep, roster, &ctx, &mut attempts)?;
    }
    sort_attempts(&mut attempts);
    Ok(Plan {
        sweep: sweep.clone(),
        catalog_sha256: catalog.catalog_sha256(),
        attempts,
        shards: 1,
    })
}

/// One category block of the sweep, resolved against the catalog: what every slot of the block needs.
struct BlockContext<'a> {
    /// The block's position in `categories`, for naming the field at fault.
    ci: usize,
    /// The block as written in the sweep configuration.
    block: &'a SweepCategory,
    /// The block's category.
    category: Category,
    /// The category's catalog file.
    file: &'a CatalogFile,
    /// The catalog file's spec version, recorded on every slot.
    task_version: String,
    /// The tasks the block selects, in selection order.
    tasks: Vec<&'a TaskSpec>,
}

impl BlockContext<'_> {
    /// The name of a field of this block, as `categories[i].field`.
    fn field(&self, f: &str) -> String {
        block_field(self.ci, f)
    }
}

/// The name of field `f` of the category block at position `ci`.
fn block_field(ci: usize, f: &str) -> String {
    format!("categories[{ci}].{f}")
}

/// Checks the sweep-level fields that need no catalog: agents, categories, the bundle id and what
/// `null_modes` requires.
fn check_sweep(sweep: &SweepConfig) -> Result<(), PlanError> {
    if sweep.agents.is_empty() {
        return Err(err("agents", "no agents listed"));
    }
    if sweep.categories.is_empty() {
        return Err(err("categories", "no categories listed"));
    }
    if !agentrank_schema::ids::is_bundle_id(&sweep.bundle_id()) {
        return Err(err(
            "bundle_id",
            format!("`{}` is not usable as a bundle id", sweep.bundle_id()),
        ));
    }
    let under_test: Vec<&String> = sweep
        .agents
        .iter()
        .filter(|a| !is_builtin_agent(a))
        .collect();
    if sweep.null_modes && !under_test.is_empty() {
        // An agent's no-tools null is its no-server control; its random-arguments null is the built-in
        // program's runs.
        if !sweep.no_server_control {
            return Err(err(
                "no_server_control",
                "null_modes needs the no-server control: it is the no-tools null of every agent under test (set no_server_control = true, or null_modes = false)",
            ));
        }
        if !sweep.agents.iter().any(|a| a == "random-args") {
            return Err(err(
                "agents",
                "null_modes needs the built-in `random-args` in `agents`: it is the random-arguments null of every agent under test (add it, or set null_modes = false)",
            ));
        }
    }
    Ok(())
}

/// Resolves a category block: its category (once per sweep), its catalog file and its task selection.
fn resolve_block<'a>(
    catalog: &'a Catalog,
    ci: usize,
    block: &'a SweepCategory,
    seen_categories: &mut std::collections::BTreeSet<Category>,
) -> Result<BlockContext<'a>, PlanError> {
    let field = |f: &str| block_field(ci, f);
    let category = parse_category(&block.category).ok_or_else(|| {
        err(
            field("category"),
            format!(
                "unknown category `{}` (databases, web-fetch, browser)",
                block.category
            ),
        )
    })?;
    if !seen_categories.insert(category) {
        return Err(err(
            field("category"),
            format!("`{}` appears twice", block.category),
        ));
    }
    let file = catalog.category(category).ok_or_else(|| {
        err(
            field("category"),
            format!("the task catalog has no `{}` file", block.category),
        )
    })?;
    let task_version = file.spec_version.clone();
    let tasks = select_tasks(file, &block.tasks, category, &field("tasks"))?;
    Ok(BlockContext {
        ci,
        block,
        category,
        file,
        task_version,
        tasks,
    })
}

/// The tasks a block's `tasks` selection names: a named set or a list of task ids.
fn select_tasks<'a>(
    file: &'a CatalogFile,
    selection: &TaskSelection,
    category: Category,
    tasks_field: &str,
) -> Result<Vec<&'a TaskSpec>, PlanError> {
    Ok(match selection {
        TaskSelection::Named(n) => match n.as_str() {
            "core" => file
                .tasks
                .iter()
                .filter(|t| t.class == TaskClass::Core)
                .collect(),
            "all" => file.tasks.iter().collect(),
            "calibration" => file
                .tasks
                .iter()
                .filter(|t| file.calibration.contains(&t.id))
                .collect(),
            "smoke" => file
                .tasks
                .iter()
                .filter(|t| file.smoke.contains(&t.id))
                .collect(),
            "basic" => file
                .tasks
                .iter()
                .filter(|t| t.tier == Tier::Basic)
                .collect(),
            other => {
                return Err(err(
                    tasks_field,
                    format!(
                        "`{other}`: use core, all, calibration, smoke, basic or a list of task ids"
                    ),
                ));
            }
        },
        TaskSelection::Ids(ids) => {
            let mut v = Vec::new();
            for id in ids {
                v.push(file.tasks.iter().find(|t| &t.id == id).ok_or_else(|| {
                    err(
                        tasks_field,
                        format!("no task `{id}` in the {} catalog", category.as_str()),
                    )
                })?);
            }
            v
        }
    })
}

/// The scored slots of every server, agent and task of the block, and the safety probes of each agent
/// that is not a null model.
fn push_server_slots(
    sweep: &SweepConfig,
    roster: &Roster,
    ctx: &BlockContext<'_>,
    attempts: &mut Vec<PlannedAttempt>,
) -> Result<(), PlanError> {
    let (block, category, file, task_version) =
        (ctx.block, ctx.category, ctx.file, &ctx.task_version);
    if block.servers.is_empty() {
        return Err(err(ctx.field("servers"), "no servers listed"));
    }
    for server_id in &block.servers {
        let server = roster.servers.get(server_id).ok_or_else(|| {
            err(
                ctx.field("servers"),
                format!("no server `{server_id}` in roster/{}/", category.as_str()),
            )
        })?;
        if server.category.as_str() != category.as_str() {
            return Err(err(
                ctx.field("servers"),
                format!(
                    "server `{server_id}` is in category {}, not {}",
                    server.category.as_str(),
                    category.as_str()
                ),
            ));
        }
        for agent in &sweep.agents {
            let model = model_of(roster, agent)?;
            for task in &ctx.tasks {
                for index in 0..sweep.attempts.max_attempts() {
                    attempts.push(slot(
                        sweep,
                        SlotKind::Scored,
                        category,
                        server_id,
                        &server.package.version,
                        agent,
                        &model,
                        &task.id,
                        task_version,
                        index,
                    ));
                }
            }
            // Safety probes ask something of an agent that uses the server; null models do not.
            if sweep.probes && !is_null_model(agent) {
                for probe in &file.probes {
                    attempts.push(slot(
                        sweep,
                        SlotKind::SafetyProbe,
                        category,
                        server_id,
                        &server.package.version,
                        agent,
                        &model,
                        &probe.id,
                        task_version,
                        0,
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Null baselines as modes of each agent under test (Fitness Report): a stubbed-empty run per core
/// task, the block's servers taken in turn (the task's position picks the server), so every server's
/// tool list is seen and the cost is one run per task.
fn push_null_mode_slots(
    sweep: &SweepConfig,
    roster: &Roster,
    ctx: &BlockContext<'_>,
    attempts: &mut Vec<PlannedAttempt>,
) -> Result<(), PlanError> {
    if !sweep.null_modes {
        return Ok(());
    }
    let block = ctx.block;
    let core_tasks: Vec<&&TaskSpec> = ctx
        .tasks
        .iter()
        .filter(|t| t.class == TaskClass::Core)
        .collect();
    for agent in sweep.agents.iter().filter(|a| !is_builtin_agent(a)) {
        let model = model_of(roster, agent)?;
        for (i, task) in core_tasks.iter().enumerate() {
            let server_id = &block.servers[i % block.servers.len()];
            let version = roster
                .servers
                .get(server_id)
                .map(|s| s.package.version.clone())
                .unwrap_or_default();
            attempts.push(slot(
                sweep,
                SlotKind::NullStubbedEmpty,
                ctx.category,
                server_id,
                &version,
                agent,
                &model,
                &task.id,
                &ctx.task_version,
                0,
            ));
        }
    }
    Ok(())
}

/// Construct-gate extension batches (Fitness Report): planned, run only when needed.
fn push_construct_slots(
    sweep: &SweepConfig,
    roster: &Roster,
    ctx: &BlockContext<'_>,
    attempts: &mut Vec<PlannedAttempt>,
) {
    if sweep.construct_batches > 0
        && sweep
            .agents
            .iter()
            .any(|a| agentrank_schema::role::is_reference_agent(a))
        && let Some(reference) = roster.category_reference(ctx.category)
        && ctx.block.servers.contains(&reference.id)
    {
        for batch in 1..=sweep.construct_batches {
            for task in ctx.tasks.iter().filter(|t| t.class == TaskClass::Core) {
                attempts.push(slot(
                    sweep,
                    SlotKind::ConstructExtension,
                    ctx.category,
                    &reference.id,
                    &reference.package.version,
                    BuiltinAgent::Reference.as_str(),
                    "",
                    &task.id,
                    &ctx.task_version,
                    batch,
                ));
            }
        }
    }
}

/// Timeout calibration (Methodology §6.4): the category's calibration tasks on its reference server,
/// per agent, before any scored attempt. Null models need no budget of their own.
fn push_calibration_slots(
    sweep: &SweepConfig,
    roster: &Roster,
    ctx: &BlockContext<'_>,
    attempts: &mut Vec<PlannedAttempt>,
) -> Result<(), PlanError> {
    if sweep.timeouts.calibration_attempts == 0 {
        return Ok(());
    }
    let (category, file) = (ctx.category, ctx.file);
    let calibrated: Vec<&String> = sweep.agents.iter().filter(|a| !is_null_model(a)).collect();
    if calibrated.is_empty() {
        return Ok(());
    }
    let reference = roster.category_reference(category).ok_or_else(|| {
        err(
            ctx.field("category"),
            format!(
                "timeout calibration needs the category's reference server, and roster/{}/ marks none with `category_reference = true` (or set timeouts.calibration_attempts = 0)",
                category.as_str()
            ),
        )
    })?;
    let calibration_tasks: Vec<&TaskSpec> = file
        .tasks
        .iter()
        .filter(|t| file.calibration.contains(&t.id))
        .collect();
    for agent in calibrated {
        let model = model_of(roster, agent)?;
        for task in &calibration_tasks {
            for index in 0..sweep.timeouts.calibration_attempts {
                attempts.push(slot(
                    sweep,
                    SlotKind::Calibration,
                    category,
                    &reference.id,
                    &reference.package.version,
                    agent,
                    &model,
                    &task.id,
                    &ctx.task_version,
                    index,
                ));
            }
        }
    }
    Ok(())
}

/// The no-server control: every agent and task of the block without a server.
fn push_no_server_control_slots(
    sweep: &SweepConfig,
    roster: &Roster,
    ctx: &BlockContext<'_>,
    attempts: &mut Vec<PlannedAttempt>,
) -> Result<(), PlanError> {
    if !sweep.no_server_control {
        return Ok(());
    }
    for agent in &sweep.agents {
        let model = model_of(roster, agent)?;
        for task in &ctx.tasks {
            attempts.push(slot(
                sweep,
                SlotKind::NoServerControl,
                ctx.category,
                "",
                "",
                agent,
                &model,
                &task.id,
                &ctx.task_version,
                0,
            ));
        }
    }
    Ok(())
}

/// Puts the plan's slots in canonical order: category, kind, server, agent, task, attempt index.
fn sort_attempts(attempts: &mut [PlannedAttempt]) {
    attempts.sort_by(|a, b| {
        (
            &a.category,
            a.kind,
            &a.server_id,
            &a.agent_id,
            &a.task_id,
            a.attempt_index,
        )
            .cmp(&(
                &b.category,
                b.kind,
                &b.server_id,
                &b.agent_id,
                &b.task_id,
                b.attempt_index,
            ))
    });
}

#[allow(clippy::too_many_arguments)]
fn slot(
    sweep: &SweepConfig,
    kind: SlotKind,
    category: Category,
    server_id: &str,
    server_version: &str,
    agent_id: &str,
    model_id: &str,
    task_id: &str,
    task_version: &str,
    attempt_index: u32,
) -> PlannedAttempt {
    let attempt_id = slot_id(
        sweep,
        kind,
        task_id,
        task_version,
        server_id,
        server_version,
        agent_id,
        model_id,
        attempt_index,
        0,
    );
    PlannedAttempt {
        seed: derive_seed(sweep.seed, &attempt_id),
        attempt_id,
        kind,
        category: category.as_str().to_string(),
        server_id: server_id.to_string(),
        server_version: server_version.to_string(),
        agent_id: agent_id.to_string(),
        model_id: model_id.to_string(),
        task_id: task_id.to_string(),
        task_version: task_version.to_string(),
        attempt_index,
    }
}

/// The content-derived id of a slot: controls and probes are keyed apart from scored tasks.
#[allow(clippy::too_many_arguments)]
fn slot_id(
    sweep: &SweepConfig,
    kind: SlotKind,
    task_id: &str,
    task_version: &str,
    server_id: &str,
    server_version: &str,
    agent_id: &str,
    model_id: &str,
    attempt_index: u32,
    rerun_index: u32,
) -> String {
    let kind_tag = match kind {
        SlotKind::Scored => "",
        SlotKind::NoServerControl => "control:",
        SlotKind::SafetyProbe => "probe:",
        SlotKind::Calibration => "calibration:",
        SlotKind::ConstructExtension => "construct:",
        SlotKind::NullStubbedEmpty => "null-stubbed-empty:",
    };
    AttemptKey {
        sweep_id: &sweep.sweep_id,
        task_id: &format!("{kind_tag}{task_id}"),
        task_version,
        server_id,
        server_version,
        agent_id,
        model_id,
        attempt_index,
        rerun_index,
    }
    .attempt_id()
}

/// The id and seed of the `rerun`-th re-run of a slot (after an excluded re-run class).
pub fn rerun_slot(sweep: &SweepConfig, slot: &PlannedAttempt, rerun: u32) -> PlannedAttempt {
    let attempt_id = slot_id(
        sweep,
        slot.kind,
        &slot.task_id,
        &slot.task_version,
        &slot.server_id,
        &slot.server_version,
        &slot.agent_id,
        &slot.model_id,
        slot.attempt_index,
        rerun,
    );
    PlannedAttempt {
        seed: derive_seed(sweep.seed, &attempt_id),
        attempt_id,
        ..slot.clone()
    }
}

/// Which shard (0-based) of `shards` a slot belongs to: whole cells stay together (the adaptive rule
/// needs a cell's earlier attempts), assigned by a hash of the cell so shards are balanced and stable.
pub fn shard_of(slot: &PlannedAttempt, shards: u32) -> u32 {
    let cell = format!(
        "{}\u{1f}{:?}\u{1f}{}\u{1f}{}\u{1f}{}",
        slot.category, slot.kind, slot.server_id, slot.agent_id, slot.task_id
    );
    let digest = sha256_hex(cell.as_bytes());
    (u64::from_str_radix(&digest[..8], 16).unwrap_or(0) % u64::from(shards.max(1))) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn specs() -> (Catalog, Roster) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        (
            crate::catalog::load_catalog_dir(&root.join("tasks")).expect("catalog"),
            Roster::load(&root.join("roster")).expect("roster"),
        )
    }

    fn sweep(calibration_attempts: u32) -> SweepConfig {
        let mut s: SweepConfig = toml::from_str(
            r#"
sweep_id = "plan-test"
seed = 7
agents = ["reference", "no-tools"]
attempts = "single"
[[categories]]
category = "databases"
servers = ["dbhub", "server-postgres"]
"#,
        )
        .expect("sweep");
        s.timeouts.calibration_attempts = calibration_attempts;
        s
    }

    /// Timeout calibration (Methodology §6.4): the category's calibration tasks on its reference server,
    /// for every agent but the null models, keyed apart from the scored attempts of the same task.
    #[test]
    fn calibration_slots_are_the_basic_tasks_on_the_reference_server() {
        let (catalog, roster) = specs();
        let plan = make_plan(&sweep(2), &catalog, &roster).expect("plan");
        let file = catalog.category(Category::Databases).expect("databases");
        let reference = roster
            .category_reference(Category::Databases)
            .expect("reference server");
        let cal: Vec<&PlannedAttempt> = plan
            .attempts
            .iter()
            .filter(|s| s.kind == SlotKind::Calibration)
            .collect();
        assert_eq!(cal.len(), file.calibration.len() * 2, "2 attempts per task");
        assert!(
            cal.iter().all(|s| s.agent_id == "reference"),
            "no null model"
        );
        assert!(cal.iter().all(|s| s.server_id == reference.id));
        let tasks: std::collections::BTreeSet<&str> =
            cal.iter().map(|s| s.task_id.as_str()).collect();
        let want: std::collections::BTreeSet<&str> =
            file.calibration.iter().map(String::as_str).collect();
        assert_eq!(tasks, want);
        let scored: std::collections::BTreeSet<&str> = plan
            .attempts
            .iter()
            .filter(|s| s.kind != SlotKind::Calibration)
            .map(|s| s.attempt_id.as_str())
            .collect();
        assert!(cal.iter().all(|s| !scored.contains(s.attempt_id.as_str())));
        // Pure: the same inputs give the same plan.
        let again = make_plan(&sweep(2), &catalog, &roster).expect("plan");
        assert_eq!(plan.hash(), again.hash());
        // Construct extension batches: the reference agent on the reference server, one attempt per
        // core task per registered batch, the batch as the attempt index.
        let ext: Vec<&PlannedAttempt> = plan
            .attempts
            .iter()
            .filter(|s| s.kind == SlotKind::ConstructExtension)
            .collect();
        let core = file
            .tasks
            .iter()
            .filter(|t| t.class == TaskClass::Core)
            .count();
        assert_eq!(ext.len(), core * 2, "two registered batches by default");
        assert!(
            ext.iter()
                .all(|s| s.agent_id == "reference" && s.server_id == reference.id)
        );
        assert!(ext.iter().all(|s| (1..=2).contains(&s.attempt_index)));
        // Off: no calibration slot.
        let off = make_plan(&sweep(0), &catalog, &roster).expect("plan");
        assert!(off.attempts.iter().all(|s| s.kind != SlotKind::Calibration));
    }
}
