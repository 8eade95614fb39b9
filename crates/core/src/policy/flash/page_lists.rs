//! List machinery shared by the page-unit rules that split one recency order
//! into clean and dirty lists (CFLRU, AD-LRU): a page that
//! [`Replacement::cleaned`](crate::policy::Replacement::cleaned) turns clean
//! must move to its clean list at the place its recency gives it.
//!
//! Such pages wait in a [`PendingClean`] and are merged into their clean lists
//! by recency stamp before the next access: one merge after a whole drain, not
//! one list walk per page. Nothing is allocated once the scratch vectors have
//! grown.

use crate::list::{Arena, List};

/// Merges `add` (nodes in no list, sorted oldest first by `stamp`) into `list`
/// (front = newest, ordered by `stamp`), keeping the order. `scratch` is reused.
pub fn merge_by_stamp<T>(
    arena: &mut Arena<T>,
    list: &mut List,
    add: &[u32],
    scratch: &mut Vec<u32>,
    stamp: impl Fn(&T) -> u64,
) {
    scratch.clear();
    while let Some(idx) = list.pop_back(arena) {
        scratch.push(idx); // oldest first
    }
    let (mut i, mut j) = (0, 0);
    while i < scratch.len() || j < add.len() {
        let older_first =
            j == add.len() || (i < scratch.len() && stamp(arena.val(scratch[i])) < stamp(arena.val(add[j])));
        let idx = if older_first {
            i += 1;
            scratch[i - 1]
        } else {
            j += 1;
            add[j - 1]
        };
        list.push_front(arena, idx);
    }
}

/// Cleaned pages, unlinked from their dirty lists, waiting to join their
/// clean lists.
#[derive(Debug, Default)]
pub struct PendingClean {
    pages: Vec<u32>,
    scratch: Vec<u32>,
}

impl PendingClean {
    /// Adds node `idx` (already unlinked).
    pub fn push(&mut self, idx: u32) {
        self.pages.push(idx);
    }

    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// Merges every pending page into the clean list `lists[list_of(page)]` by
    /// `stamp` (unique per page, larger = more recent), and calls `mark` on
    /// each page to record where it now is.
    pub fn merge_into<T, const N: usize>(
        &mut self,
        arena: &mut Arena<T>,
        lists: [&mut List; N],
        list_of: impl Fn(&T) -> usize,
        stamp: impl Fn(&T) -> u64 + Copy,
        mark: impl Fn(&mut T),
    ) {
        if self.pages.is_empty() {
            return;
        }
        self.pages.sort_unstable_by_key(|&i| {
            let p = arena.val(i);
            (list_of(p), stamp(p))
        });
        let mut rest = &self.pages[..];
        for (n, list) in lists.into_iter().enumerate() {
            let len = rest.partition_point(|&i| list_of(arena.val(i)) == n);
            let (mine, others) = rest.split_at(len);
            for &i in mine {
                mark(arena.val_mut(i));
            }
            merge_by_stamp(arena, list, mine, &mut self.scratch, stamp);
            rest = others;
        }
        debug_assert!(rest.is_empty(), "a pending page names a list that is not there");
        self.pages.clear();
    }
}
