//! The run pool of the suites whose runs are independent jobs, each on its
//! own emulated link (conn-length, getall): `parallel` threads take jobs in
//! order until none is left. A job's error stops the others at their next
//! job and is returned; after Ctrl-C no new job starts and what was
//! measured is kept (see [`crate::interrupt`]).

use std::collections::VecDeque;
use std::sync::Mutex;

use anyhow::{anyhow, Result};

/// Runs every job of `jobs` on `parallel` threads (at least one), in the
/// order given; returns what the jobs returned, in the order they ended.
pub fn run<J, R, F>(jobs: Vec<J>, parallel: usize, one: F) -> Result<Vec<R>>
where
    J: Send,
    R: Send,
    F: Fn(J) -> Result<Vec<R>> + Sync,
{
    let jobs = Mutex::new(VecDeque::from(jobs));
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| -> Result<()> {
        let workers: Vec<_> = (0..parallel.max(1))
            .map(|_| {
                s.spawn(|| -> Result<()> {
                    // Bounded by the job count.
                    loop {
                        // Ctrl-C: no new link; what was measured is kept.
                        if crate::interrupt::signalled() {
                            return Ok(());
                        }
                        let Some(job) = jobs.lock().map_err(|_| anyhow!("poisoned"))?.pop_front()
                        else {
                            return Ok(());
                        };
                        let got = one(job)?;
                        results.lock().map_err(|_| anyhow!("poisoned"))?.extend(got);
                    }
                })
            })
            .collect();
        let mut first_err = None;
        for w in workers {
            let r = w.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            if let (Err(e), None) = (r, &first_err) {
                // Stop the others at their next job.
                if let Ok(mut j) = jobs.lock() {
                    j.clear();
                }
                first_err = Some(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    })?;
    results.into_inner().map_err(|_| anyhow!("poisoned"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_runs_once_and_an_error_is_returned() {
        let mut got = run((0..20).collect(), 3, |j: u32| Ok(vec![j, j + 100])).unwrap();
        got.sort_unstable();
        let mut want: Vec<u32> = (0..20).chain(100..120).collect();
        want.sort_unstable();
        assert_eq!(got, want);
        let err = run((0..10).collect(), 2, |j: u32| {
            if j == 4 {
                Err(anyhow!("job 4 failed"))
            } else {
                Ok(vec![j])
            }
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "job 4 failed");
    }
}
