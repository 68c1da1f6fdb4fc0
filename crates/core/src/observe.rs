//! How a learner reports progress: checkpoint schedules, the solver clock that excludes
//! evaluation time, the [`Observer`] that evaluates a model off the clock, and [`drive`], the
//! one checkpoint loop every iterative learner runs through.
//!
//! A learner family chooses its model type `M` (a [`Scorer`] for the rankers, a factor model
//! for the factorisers, ...); the observer of that family receives `&M` at each checkpoint.

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
/// counted as training time. `M` is the family's model type (default: a similarity).
pub trait Observer<M: ?Sized = dyn Scorer> {
    fn checkpoint(&mut self, at: Checkpoint, model: &M) -> Control;
}

/// An observer that ignores everything (training without evaluation, e.g. in benchmarks).
pub struct NullObserver;

impl<M: ?Sized> Observer<M> for NullObserver {
    fn checkpoint(&mut self, _at: Checkpoint, _model: &M) -> Control {
        Control::Continue
    }
}

/// What a training step says about the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// More steps may follow.
    Continue,
    /// The learner has nothing more to do (converged, or reached its own iteration cap): the
    /// model after this step is reported as the last one.
    Finished,
}

/// A learner's training state, advanced one step at a time by [`drive`].
pub trait Stepper {
    /// The model the method outputs (what observers receive).
    type Model: ?Sized;
    type Error;
    /// Take training step number `step` (1-based: the first call takes step 1).
    fn step(&mut self, step: u64) -> Result<Flow, Self::Error>;
    /// Form the model the method outputs after `step` steps and hand it to `show`. Forming it
    /// (symmetrising, projecting, averaging, assembling a d x d matrix) is part of the method
    /// and runs on the solver clock; `show` runs off it.
    fn report(
        &mut self,
        step: u64,
        show: &mut dyn FnMut(&Self::Model) -> Control,
    ) -> Result<Control, Self::Error>;
    /// Whether the freshly built state has nothing to learn (e.g. a zero gradient at the
    /// start): its initial model is then reported as the last one. Default: no.
    fn finished_at_start(&self) -> bool {
        false
    }
}

/// A [`Stepper`] made of a state, a step function and a view of the model: the common case
/// where the reported model is part of the state. See [`steps`].
pub struct Steps<S, F, M: ?Sized, E> {
    pub state: S,
    step: F,
    view: fn(&S) -> &M,
    _error: std::marker::PhantomData<fn() -> E>,
}

/// A [`Stepper`] over `state`: `step(&mut state, n)` takes step `n`, `view(&state)` is the
/// model reported (a function, e.g. a non-capturing closure `|s: &State| &s.model`).
pub fn steps<S, F, M: ?Sized, E>(state: S, step: F, view: fn(&S) -> &M) -> Steps<S, F, M, E>
where
    F: FnMut(&mut S, u64) -> Result<Flow, E>,
{
    Steps {
        state,
        step,
        view,
        _error: std::marker::PhantomData,
    }
}

impl<S, F, M: ?Sized, E> Stepper for Steps<S, F, M, E>
where
    F: FnMut(&mut S, u64) -> Result<Flow, E>,
{
    type Model = M;
    type Error = E;

    fn step(&mut self, step: u64) -> Result<Flow, E> {
        (self.step)(&mut self.state, step)
    }

    fn report(&mut self, _step: u64, show: &mut dyn FnMut(&M) -> Control) -> Result<Control, E> {
        Ok(show((self.view)(&self.state)))
    }
}

/// How a [`drive`] ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Driven {
    /// Steps taken.
    pub steps: u64,
    /// Solver seconds (setup and steps; evaluation excluded).
    pub solver_seconds: f64,
    /// The learner finished before the schedule's budget.
    pub finished_early: bool,
    /// The observer asked to stop.
    pub stopped: bool,
}

/// The checkpoint loop of every iterative learner: start the solver clock, build the state
/// with `init` (on the clock), then report the model at every step of `schedule` (step 0 is
/// the initial model) and step in between, until the schedule's last step, until the
/// learner says [`Flow::Finished`] (its model is then reported, marked last, whether or not
/// the step is a checkpoint), or until the observer answers [`Control::Stop`]. An empty
/// schedule reports nothing and takes no step.
pub fn drive<S: Stepper>(
    schedule: &Schedule,
    obs: &mut dyn Observer<S::Model>,
    init: impl FnOnce() -> Result<S, S::Error>,
) -> Result<Driven, S::Error> {
    let checkpoints = schedule.steps();
    let mut clock = SolverClock::start();
    let mut out = Driven {
        steps: 0,
        solver_seconds: 0.0,
        finished_early: false,
        stopped: false,
    };
    if checkpoints.is_empty() {
        out.solver_seconds = clock.pause();
        return Ok(out);
    }
    let mut state = init()?;
    out.finished_early = state.finished_at_start() && schedule.budget() > 0;
    let mut next = 0;
    let mut step = 0u64;
    loop {
        let at_checkpoint = checkpoints.get(next) == Some(&step);
        if at_checkpoint {
            next += 1;
        }
        if at_checkpoint || out.finished_early {
            let last = out.finished_early || next == checkpoints.len();
            let control = state.report(step, &mut |model: &S::Model| {
                let solver_seconds = clock.pause();
                let c = obs.checkpoint(
                    Checkpoint {
                        step,
                        solver_seconds,
                        last,
                    },
                    model,
                );
                clock.resume();
                c
            })?;
            if control == Control::Stop {
                out.stopped = true;
                break;
            }
            if last {
                break;
            }
        }
        step += 1;
        // Finishing exactly at the budget is no early finish: that step is a checkpoint.
        out.finished_early = state.step(step)? == Flow::Finished && step < schedule.budget();
    }
    out.steps = step;
    out.solver_seconds = clock.pause();
    Ok(out)
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
    pub fn report<M: ?Sized>(
        &mut self,
        step: u64,
        last: bool,
        model: &M,
        obs: &mut dyn Observer<M>,
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

    /// Counts its steps; finishes after `finish_at` steps; reports its step count.
    struct Counter {
        taken: u64,
        finish_at: u64,
    }

    impl Stepper for Counter {
        type Model = u64;
        type Error = String;
        fn step(&mut self, step: u64) -> Result<Flow, String> {
            assert_eq!(step, self.taken + 1, "steps are numbered from 1, in order");
            self.taken = step;
            Ok(if step >= self.finish_at {
                Flow::Finished
            } else {
                Flow::Continue
            })
        }
        fn report(
            &mut self,
            _step: u64,
            show: &mut dyn FnMut(&u64) -> Control,
        ) -> Result<Control, String> {
            Ok(show(&self.taken))
        }
    }

    /// Records (step, model, last) and stops after `stop_after` reports.
    struct Seen(Vec<(u64, u64, bool)>, usize);

    impl Observer<u64> for Seen {
        fn checkpoint(&mut self, at: Checkpoint, model: &u64) -> Control {
            self.0.push((at.step, *model, at.last));
            if self.0.len() >= self.1 {
                Control::Stop
            } else {
                Control::Continue
            }
        }
    }

    fn run(steps: Vec<u64>, finish_at: u64, stop_after: usize) -> (Vec<(u64, u64, bool)>, Driven) {
        let mut seen = Seen(Vec::new(), stop_after);
        let d = drive(&Schedule::new(steps), &mut seen, || {
            Ok::<_, String>(Counter {
                taken: 0,
                finish_at,
            })
        })
        .unwrap();
        (seen.0, d)
    }

    #[test]
    fn drive_reports_every_checkpoint_and_the_model_after_that_many_steps() {
        let (seen, d) = run(vec![0, 2, 5], u64::MAX, usize::MAX);
        assert_eq!(seen, vec![(0, 0, false), (2, 2, false), (5, 5, true)]);
        assert_eq!((d.steps, d.finished_early, d.stopped), (5, false, false));
    }

    #[test]
    fn drive_reports_an_early_finish_as_last_and_stops_on_request() {
        // Finished after step 3, between checkpoints 2 and 5: reported at 3, marked last.
        let (seen, d) = run(vec![0, 2, 5], 3, usize::MAX);
        assert_eq!(seen, vec![(0, 0, false), (2, 2, false), (3, 3, true)]);
        assert!(d.finished_early && d.steps == 3);
        // Finished exactly at the budget: an ordinary last checkpoint.
        let (seen, d) = run(vec![0, 4], 4, usize::MAX);
        assert_eq!(seen, vec![(0, 0, false), (4, 4, true)]);
        assert!(!d.finished_early);
        // The observer stops the run after its second report: no step beyond it.
        let (seen, d) = run(vec![0, 2, 5], u64::MAX, 2);
        assert_eq!(seen, vec![(0, 0, false), (2, 2, false)]);
        assert!(d.stopped && d.steps == 2);
        // An empty schedule reports nothing and builds no state.
        let mut seen = Seen(Vec::new(), usize::MAX);
        let d = drive::<Counter>(&Schedule::new(vec![]), &mut seen, || {
            panic!("no state for an empty schedule")
        })
        .unwrap();
        assert!(seen.0.is_empty() && d.steps == 0);
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
