//! `file.delete.delay.ms`: what Kafka deletes asynchronously is first renamed (a segment's files
//! and its producer snapshot to `*.deleted`, a partition directory to `<tp>.<id>-delete`) and
//! removed once the delay has passed — Kafka's scheduled `delete-file`,
//! `delete-producer-snapshot` and `kafka-delete-logs` tasks. Here one queue of renamed things
//! and their due times serves all of them; the log manager's upkeep removes what is due.

/// Renamed things waiting for their `file.delete.delay.ms` to pass, oldest first.
#[derive(Debug)]
pub(crate) struct DelayedRemovals<T> {
    pending: Vec<(i64, T)>,
}

impl<T> Default for DelayedRemovals<T> {
    fn default() -> Self {
        DelayedRemovals {
            pending: Vec::new(),
        }
    }
}

impl<T> DelayedRemovals<T> {
    /// Lists `item`, renamed at `now_ms`, to be removed once `delay_ms` has passed.
    pub(crate) fn schedule(&mut self, now_ms: i64, delay_ms: i64, item: T) {
        self.pending.push((now_ms.saturating_add(delay_ms), item));
    }

    /// Removes with `remove`, in the order they were listed, the items due at `now_ms`.
    /// Returns how many went.
    ///
    /// # Errors
    /// The first failure of `remove`: that item and the due ones not yet tried stay listed
    /// for the next call.
    pub(crate) fn remove_due<E>(
        &mut self,
        now_ms: i64,
        mut remove: impl FnMut(&T) -> Result<(), E>,
    ) -> Result<usize, E> {
        let mut removed = 0;
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].0 > now_ms {
                i += 1;
                continue;
            }
            remove(&self.pending[i].1)?;
            drop(self.pending.remove(i));
            removed += 1;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::DelayedRemovals;

    #[test]
    fn items_go_once_their_delay_passed_and_a_failure_keeps_them() {
        let mut q = DelayedRemovals::default();
        q.schedule(0, 10, "a");
        q.schedule(5, 10, "b");
        let mut gone: Vec<&'static str> = vec![];
        let mut take = |x: &&'static str| -> Result<(), &'static str> {
            gone.push(x);
            Ok(())
        };
        assert_eq!(q.remove_due(9, &mut take), Ok(0));
        assert_eq!(q.remove_due(10, |_| Err("disk")), Err("disk"));
        assert_eq!(q.remove_due(15, &mut take), Ok(2));
        assert_eq!(gone, ["a", "b"]);
    }
}
