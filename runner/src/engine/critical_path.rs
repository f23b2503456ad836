//! The critical path of a finished run: the longest chain of measured step durations that no
//! schedule could beat, counting what serialize keys impose.
//!
//! Dependencies alone understate the floor: instances sharing a serialize key (a managed
//! identity's federated credentials, which Azure refuses to write concurrently) run one at a
//! time whatever the runner does. So besides the longest dependency chain, each key gives a
//! bound no schedule can beat: the earliest any of its instances could start, plus all of
//! their durations back to back, plus the shortest chain any of them still has after it. The
//! critical path is the larger of these, so wall time ÷ critical path measures the runner, not
//! the runbook.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use crate::plan::Plan;

/// Returns the critical path's length and its instances, first to last. `took` is each
/// instance's measured time (zero when it did not run here), `serialized_by` the key it held,
/// `began` when it started (the order instances of one key are listed in).
pub fn critical_path(
    plan: &Plan,
    dependents: &[Vec<usize>],
    took: &[Duration],
    serialized_by: &[Option<String>],
    began: &[Option<Instant>],
) -> (Duration, Vec<usize>) {
    let chains = Chains::measure(plan, dependents, took);
    let Some(last) = (0..took.len()).max_by_key(|&i| chains.finish[i]) else { return (Duration::ZERO, Vec::new()) };
    let mut best = (chains.finish[last], chains.path_to(last));

    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, key) in serialized_by.iter().enumerate() {
        if let (Some(key), Some(_)) = (key, began[i]) {
            groups.entry(key.as_str()).or_default().push(i);
        }
    }
    for mut members in groups.into_values().filter(|m| m.len() > 1) {
        members.sort_by_key(|&i| began[i]);
        let first = *members.iter().min_by_key(|&&i| chains.head(i)).expect("a group has members");
        let after = *members.iter().min_by_key(|&&i| chains.tail[i]).expect("a group has members");
        let bound = chains.head(first) + members.iter().map(|&i| took[i]).sum::<Duration>() + chains.tail[after];
        if bound > best.0 {
            let mut path = chains.waited_for[first].map(|d| chains.path_to(d)).unwrap_or_default();
            path.extend(&members);
            path.extend(chains.path_after(after));
            best = (bound, path);
        }
    }
    best
}

/// The longest dependency chains into and out of each instance.
struct Chains {
    /// When the instance would finish if each started as soon as its dependencies finished.
    finish: Vec<Duration>,
    /// The dependency that finished last (the chain into it).
    waited_for: Vec<Option<usize>>,
    /// The longest chain of dependents after it finishes, and its first step.
    tail: Vec<Duration>,
    tail_next: Vec<Option<usize>>,
    took: Vec<Duration>,
}

impl Chains {
    fn measure(plan: &Plan, dependents: &[Vec<usize>], took: &[Duration]) -> Chains {
        let n = plan.instances.len();
        let mut waiting: Vec<usize> = plan.instances.iter().map(|i| i.deps.len()).collect();
        let mut finish = vec![Duration::ZERO; n];
        let mut waited_for = vec![None; n];
        let mut order = Vec::with_capacity(n);
        let mut queue: VecDeque<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
        while let Some(i) = queue.pop_front() {
            order.push(i);
            let latest = plan.instances[i].deps.iter().copied().max_by_key(|&d| finish[d]);
            waited_for[i] = latest;
            finish[i] = latest.map(|d| finish[d]).unwrap_or_default() + took[i];
            for &d in &dependents[i] {
                waiting[d] -= 1;
                if waiting[d] == 0 {
                    queue.push_back(d);
                }
            }
        }
        let mut tail = vec![Duration::ZERO; n];
        let mut tail_next = vec![None; n];
        for &i in order.iter().rev() {
            if let Some(next) = dependents[i].iter().copied().max_by_key(|&d| took[d] + tail[d]) {
                tail[i] = took[next] + tail[next];
                tail_next[i] = Some(next);
            }
        }
        Chains { finish, waited_for, tail, tail_next, took: took.to_vec() }
    }

    /// The earliest the instance could start: when its last dependency could finish.
    fn head(&self, i: usize) -> Duration {
        self.finish[i] - self.took[i]
    }

    /// The chain ending at `i`, first to last.
    fn path_to(&self, i: usize) -> Vec<usize> {
        let mut path = vec![i];
        while let Some(before) = self.waited_for[*path.last().expect("never empty")] {
            path.push(before);
        }
        path.reverse();
        path
    }

    /// The longest chain of dependents after `i`, `i` itself left out.
    fn path_after(&self, i: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = i;
        while let Some(next) = self.tail_next[at] {
            path.push(next);
            at = next;
        }
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Instance;

    fn plan(deps: &[&[usize]]) -> Plan {
        let instances = deps
            .iter()
            .enumerate()
            .map(|(i, d)| Instance {
                id: format!("s{i}"),
                step: i,
                item: None,
                deps: d.to_vec(),
                skipped_by_when: false,
            })
            .collect();
        Plan { instances, ..Default::default() }
    }

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|&v| Duration::from_millis(v)).collect()
    }

    #[test]
    fn without_keys_it_is_the_longest_dependency_chain() {
        let plan = plan(&[&[], &[0], &[], &[2]]);
        let now = Instant::now();
        let (length, path) =
            critical_path(&plan, &plan.dependents(), &ms(&[5, 5, 20, 1]), &[None, None, None, None], &[Some(now); 4]);
        assert_eq!((length, path), (Duration::from_millis(21), vec![2, 3]));
    }

    #[test]
    fn instances_of_one_key_count_back_to_back() {
        // root(0) -> three credentials of one identity (1, 2, 3), each -> its check (4, 5, 6).
        let plan = plan(&[&[], &[0], &[0], &[0], &[1], &[2], &[3]]);
        let key = Some("identity-disk".to_string());
        let keys = [None, key.clone(), key.clone(), key, None, None, None];
        let now = Instant::now();
        let began: Vec<Option<Instant>> =
            [0, 10, 20, 30, 20, 30, 40].iter().map(|&d| Some(now + Duration::from_millis(d))).collect();
        let (length, path) = critical_path(&plan, &plan.dependents(), &ms(&[10, 10, 10, 10, 2, 2, 2]), &keys, &began);
        // Dependencies alone: 10 + 10 + 2 = 22; the key: 10 + 3 × 10 + 2 = 42.
        assert_eq!(length, Duration::from_millis(42));
        assert_eq!(path, vec![0, 1, 2, 3, 4]);
    }
}
