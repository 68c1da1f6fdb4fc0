//! How a learner reports progress: checkpoint schedules, the solver clock that excludes
//! evaluation time, and the [`Observer`] that evaluates a model off the clock.

use crate::model::Scorer;
use std::time::{Duration, Instant};

/// The training steps at which a learner must report its model, strictly increasing.
/// Step 0 is the initial model (before any update).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    steps: Vec<u64>,
}

impl Schedule {
    /// A schedule from any list of steps (sorted and deduplicated here).
    pub fn new(mut steps: Vec<u64>) -> Self {
        steps.sort_unstable();
        steps.dedup();
        Self { steps }
    }

    /// Only the final model after `steps` steps.
    pub fn last_only(steps: u64) -> Self {
        Self::new(vec![steps])
    }

    pub fn steps(&self) -> &[u64] {
        &self.steps
    }

    /// The training budget: the last step of the schedule (0 when empty).
    pub fn budget(&self) -> u64 {
        self.steps.last().copied().unwrap_or(0)
    }

    /// Whether `step` is a checkpoint.
    pub fn contains(&self, step: u64) -> bool {
        self.steps.binary_search(&step).is_ok()
    }
}

/// What the observer saw at one checkpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Checkpoint {
    /// Training steps taken so far.
    pub step: u64,
    /// Solver seconds so far: time spent inside the learner, evaluation excluded.
    pub solver_seconds: f64,
    /// Whether this is the learner's final model (end of schedule, or converged).
    pub last: bool,
}

/// The observer's answer: keep training or stop now (early stopping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Continue,
    Stop,
}

/// Receives the model at every checkpoint of the schedule. Called with the solver clock
/// paused, so whatever it does (evaluating on held-out data, copying the model) is not
/// counted as training time.
pub trait Observer {
    fn checkpoint(&mut self, at: Checkpoint, model: &dyn Scorer) -> Control;
}

/// An observer that ignores everything (training without evaluation, e.g. in benchmarks).
pub struct NullObserver;

impl Observer for NullObserver {
    fn checkpoint(&mut self, _at: Checkpoint, _model: &dyn Scorer) -> Control {
        Control::Continue
    }
}

/// A stopwatch that accumulates only the time it is running.
#[derive(Debug)]
pub struct SolverClock {
    total: Duration,
    started: Option<Instant>,
}

impl SolverClock {
    /// A running clock.
    pub fn start() -> Self {
        Self {
            total: Duration::ZERO,
            started: Some(Instant::now()),
        }
    }

    /// Stop accumulating; returns the seconds accumulated so far.
    pub fn pause(&mut self) -> f64 {
        if let Some(t) = self.started.take() {
            self.total += t.elapsed();
        }
        self.total.as_secs_f64()
    }

    pub fn resume(&mut self) {
        if self.started.is_none() {
            self.started = Some(Instant::now());
        }
    }

    /// Seconds accumulated so far (including the current run, if running).
    pub fn seconds(&self) -> f64 {
        let running = self.started.map(|t| t.elapsed()).unwrap_or_default();
        (self.total + running).as_secs_f64()
    }

    /// Pause, report `step` to `obs` (`last`: no further report will follow), resume.
    /// Returns the observer's decision.
    pub fn report(
        &mut self,
        step: u64,
        last: bool,
        model: &dyn Scorer,
        obs: &mut dyn Observer,
    ) -> Control {
        let solver_seconds = self.pause();
        let c = obs.checkpoint(
            Checkpoint {
                step,
                solver_seconds,
                last,
            },
            model,
        );
        self.resume();
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_is_sorted_and_deduplicated() {
        let s = Schedule::new(vec![10, 0, 5, 10]);
        assert_eq!(s.steps(), &[0, 5, 10]);
        assert_eq!(s.budget(), 10);
        assert!(s.contains(5) && !s.contains(6));
    }

    #[test]
    fn paused_clock_does_not_advance() {
        let mut c = SolverClock::start();
        let a = c.pause();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(c.seconds(), a);
        c.resume();
        assert!(c.seconds() >= a);
    }
}
