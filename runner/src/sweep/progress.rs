//! What a sweep reports while it runs, as events sent to the caller's [`ProgressSink`] (the binary
//! renders them on standard error): one progress line per attempt with the estimate of the time left,
//! the end of a phase, and notes (calibration, budgets, the managed model servers).

use agentrank_schema::sweep::PlannedAttempt;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// One thing a running sweep reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SweepEvent {
    /// An attempt ended or was found staged: its progress line (on a terminal, rewritten in place).
    Attempt(String),
    /// A phase's attempts are all done (on a terminal, the progress line is ended).
    PhaseEnd,
    /// A line of its own: calibration, frozen budgets, the managed model servers.
    Note(String),
}

/// Where a sweep sends its [`SweepEvent`]s.
#[derive(Clone)]
pub struct ProgressSink(Arc<dyn Fn(&SweepEvent) + Send + Sync>);

impl ProgressSink {
    /// A sink that hands every event to `f`.
    pub fn new(f: impl Fn(&SweepEvent) + Send + Sync + 'static) -> Self {
        ProgressSink(Arc::new(f))
    }

    /// A sink that drops every event.
    pub fn silent() -> Self {
        ProgressSink::new(|_| {})
    }

    /// Sends one event.
    pub fn send(&self, event: SweepEvent) {
        (self.0)(&event);
    }
}

impl Default for ProgressSink {
    fn default() -> Self {
        ProgressSink::silent()
    }
}

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// One progress line per attempt, sent to the sink.
pub(super) struct ProgressLine {
    sink: ProgressSink,
    /// Cells in the run and cells finished.
    total: usize,
    done: usize,
    /// Per agent: cells not finished yet, and the seconds and count of the cells this run finished
    /// itself (cells an earlier run staged take no time and would flatter the pace).
    pace: BTreeMap<String, AgentPace>,
    /// Cells run at the same time: each cell's wall time includes waiting for the others.
    jobs: usize,
    attempts: usize,
    started: Instant,
}

#[derive(Debug, Default, Clone, Copy)]
pub(super) struct AgentPace {
    remaining: usize,
    secs: f64,
    done_here: usize,
}

impl ProgressLine {
    pub(super) fn new(cells: &[&PlannedAttempt], sink: ProgressSink, jobs: usize) -> ProgressLine {
        let mut pace: BTreeMap<String, AgentPace> = BTreeMap::new();
        for c in cells {
            pace.entry(c.agent_id.clone()).or_default().remaining += 1;
        }
        ProgressLine {
            sink,
            total: cells.len(),
            done: 0,
            pace,
            jobs: jobs.max(1),
            attempts: 0,
            started: Instant::now(),
        }
    }

    pub(super) fn cell_done(&mut self, agent: &str, secs: f64, ran_here: bool) {
        self.done += 1;
        let p = self.pace.entry(agent.to_string()).or_default();
        p.remaining = p.remaining.saturating_sub(1);
        if ran_here {
            p.secs += secs;
            p.done_here += 1;
        }
    }

    /// The time left: each agent's remaining cells at that agent's own pace so far (an agent with no
    /// finished cell yet at the pace of all agents together), `jobs` cells at a time. `None` until a
    /// cell has finished.
    pub(super) fn time_left(&self) -> Option<f64> {
        let (secs, n) = self
            .pace
            .values()
            .fold((0.0, 0usize), |(s, n), p| (s + p.secs, n + p.done_here));
        if n == 0 {
            return None;
        }
        let overall = secs / n as f64;
        Some(
            self.pace
                .values()
                .map(|p| {
                    let per = if p.done_here > 0 {
                        p.secs / p.done_here as f64
                    } else {
                        overall
                    };
                    per * p.remaining as f64
                })
                .sum::<f64>()
                / self.jobs as f64,
        )
    }
}

impl ProgressLine {
    pub(super) fn report(
        &mut self,
        slot: &PlannedAttempt,
        outcome: &str,
        secs: f64,
        resumed: bool,
    ) {
        self.attempts += 1;
        let elapsed = self.started.elapsed().as_secs_f64();
        let line = format!(
            "[cell {}/{}, attempt {}, {:>5.0}s, {}] {} {} {} {} #{} → {}{} ({secs:.1}s)",
            self.done + 1,
            self.total,
            self.attempts,
            elapsed,
            time_left(self.time_left()),
            slot.category,
            if slot.server_id.is_empty() {
                "(no server)"
            } else {
                &slot.server_id
            },
            slot.agent_id,
            slot.task_id,
            slot.attempt_index,
            outcome,
            if resumed { " (staged earlier)" } else { "" },
        );
        self.sink.send(SweepEvent::Attempt(line));
    }
    /// The sink the lines go to.
    pub(super) fn sink(&self) -> &ProgressSink {
        &self.sink
    }

    pub(super) fn finish(&self) {
        self.sink.send(SweepEvent::PhaseEnd);
    }
}

/// The estimate in words.
pub(super) fn time_left(left: Option<f64>) -> String {
    let Some(left) = left else {
        return "time left: estimating".into();
    };
    let left = left.round() as u64;
    if left >= 3600 {
        format!("about {}h{:02}m left", left / 3600, (left % 3600) / 60)
    } else if left >= 60 {
        format!("about {}m{:02}s left", left / 60, left % 60)
    } else {
        format!("about {left}s left")
    }
}

#[cfg(test)]
mod progress_tests {
    use super::*;
    use agentrank_schema::sweep::SlotKind;

    fn cell(agent: &str) -> PlannedAttempt {
        PlannedAttempt {
            attempt_id: String::new(),
            kind: SlotKind::Scored,
            category: "web-fetch".into(),
            server_id: "s".into(),
            server_version: String::new(),
            agent_id: agent.into(),
            model_id: String::new(),
            task_id: "t".into(),
            task_version: String::new(),
            attempt_index: 0,
            seed: 0,
        }
    }

    /// Each agent's remaining cells at its own pace, cells staged by an earlier run left out of the
    /// pace, `jobs` cells at a time.
    #[test]
    fn time_left_weighs_each_agents_cells_at_its_own_pace() {
        let (model, fast) = (cell("model"), cell("reference"));
        let cells = vec![&model, &model, &model, &fast, &fast, &fast];
        let mut p = ProgressLine::new(&cells, ProgressSink::silent(), 2);
        assert_eq!(p.time_left(), None);
        assert_eq!(time_left(None), "time left: estimating");
        p.cell_done("model", 100.0, true);
        p.cell_done("reference", 2.0, true);
        p.cell_done("reference", 0.0, false); // staged earlier: not part of the pace
        // 2 model cells × 100 s + 1 reference cell × 2 s, two at a time.
        assert_eq!(p.time_left(), Some(101.0));
        assert_eq!(time_left(p.time_left()), "about 1m41s left");
        assert_eq!(time_left(Some(7500.0)), "about 2h05m left");
    }
}
