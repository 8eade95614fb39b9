//! Index-linked lists: the one list building block of the crate. A [`List`]
//! is a head, a tail and a length; its nodes are `u32` indices into a store
//! that keeps each node's [`Links`] ([`LinkStore`]). The policies' store is an
//! [`Arena`] (nodes with a key index); several [`List`]s can share one so a
//! node moves between them (ARC's T1/T2/B1/B2) without reallocating. A node
//! on two lists at once keeps a second pair of links in its value (LIRS's `S`
//! and `Q`: `List<InVal>` over an `Arena<Links>`); other stores are plain
//! vectors of records with a [`Links`] field (the hybrid FTL's log blocks;
//! LFU's bucket chain stays hand-linked, see `lfu.rs`). No `Rc`, no per-access allocation once the store
//! has grown; every list operation is monomorphised for its store.
//!
//! Memory per tracked key in an [`Arena`]: a 16-byte node (key + two links)
//! plus `T`, and about 5–9 bytes of hash index (a `u32` slot and a control
//! byte per bucket).
//!
//! Room grows with use: a structure sized by the cache reserves at most
//! [`UPFRONT`] entries when it is made, then grows towards its limit as keys
//! arrive ([`reserve_for`]), so a 1 TiB cache on a three-line trace costs what
//! the trace touches, not 2^28 pages' worth.

use hashbrown::{DefaultHashBuilder, HashTable};
use std::hash::BuildHasher;
use std::marker::PhantomData;

/// Marks "no node".
pub const NIL: u32 = u32::MAX;

/// Most entries a structure sized by the cache reserves before it is used
/// (a few MiB at most): beyond this, room is taken as keys arrive.
pub const UPFRONT: usize = 1 << 16;

/// An empty vector for at most `limit` entries: room for `limit`, or for
/// [`UPFRONT`] if that is fewer (it grows with [`reserve_for`]).
pub fn upfront<T>(limit: usize) -> Vec<T> {
    Vec::with_capacity(limit.min(UPFRONT))
}

/// Makes room in `v` for `len` entries, about to be reached by a push or
/// resize. Grows as `Vec` does, by doubling, but stops at `limit`, the most the
/// structure is expected to hold: a cache that fills up ends with exactly the
/// room it would have had if sized up front, no slack. (Past `limit` it keeps
/// doubling: a hint exceeded must not make every push reallocate.)
#[inline]
pub fn reserve_for<T>(v: &mut Vec<T>, len: usize, limit: usize) {
    if len > v.capacity() {
        grow(v, len, limit);
    }
}

/// Makes `v`, a vector kept beside the nodes (indexed like them), cover index
/// `idx`, new entries set to `fill`; it grows as [`reserve_for`] does, towards
/// `limit`.
#[inline(always)]
pub fn cover<T: Clone>(v: &mut Vec<T>, idx: usize, limit: usize, fill: T) {
    if idx >= v.len() {
        extend(v, idx, limit, fill);
    }
}

/// [`cover`]'s growth, off the path that finds the vector long enough.
#[cold]
fn extend<T: Clone>(v: &mut Vec<T>, idx: usize, limit: usize, fill: T) {
    reserve_for(v, idx + 1, limit);
    v.resize(idx + 1, fill);
}

#[cold]
fn grow<T>(v: &mut Vec<T>, len: usize, limit: usize) {
    let doubled = (2 * v.capacity()).max(len).max(4);
    let want = if len <= limit { doubled.min(limit) } else { doubled };
    v.reserve_exact(want - v.len());
}

/// A node's neighbours on one list (`NIL` at the ends or off the list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Links {
    pub prev: u32,
    pub next: u32,
}

impl Links {
    /// On no list.
    pub const NONE: Links = Links { prev: NIL, next: NIL };
}

impl Default for Links {
    fn default() -> Self {
        Links::NONE
    }
}

/// Which links of a node a list threads through: [`Own`] (the store's own
/// links for the node) or [`InVal`] (a second pair kept in an arena node's value).
pub trait Which {}
/// A list through the store's own links (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct Own;
/// A list through the [`Links`] an `Arena<Links>` keeps as each node's value.
#[derive(Clone, Copy, Debug, Default)]
pub struct InVal;
impl Which for Own {}
impl Which for InVal {}

/// Where the nodes of a list keep their [`Links`], by node index.
pub trait LinkStore<W: Which = Own> {
    fn links(&self, idx: u32) -> &Links;
    fn links_mut(&mut self, idx: u32) -> &mut Links;
}

/// Asks the CPU to start loading the cache line holding `*x`, without waiting.
#[inline(always)]
fn prefetch_line<X>(x: &X) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` only hints the cache; it cannot fault or change
    // memory, and the pointer comes from a live reference anyway. (std has no
    // safe wrapper: the intrinsic is unsafe because it takes a raw pointer.)
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((x as *const X).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::hint::black_box(x);
}

#[derive(Clone, Debug)]
pub struct Node<T> {
    pub key: u64,
    links: Links,
    pub val: T,
}

/// Node storage plus a key → node index. Indices stay valid until the node is removed.
pub struct Arena<T> {
    nodes: Vec<Node<T>>,
    free: u32,
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
    live: usize,
    /// The most live keys expected: node room grows up to this, not past it.
    limit: usize,
}

impl<T> Arena<T> {
    /// For up to `n` live keys: room for [`UPFRONT`] of them now (all `n` if
    /// fewer), more as they arrive. (Under churn hashbrown's tombstones make the
    /// index double once; sizing it for 2n up front saves that transient — LRU
    /// 37.5 → 30.6 heap bytes per page — but measured 1.4–2× slower on the 10 M
    /// Zipf benchmark, as the table then keeps rehashing in place.)
    pub fn with_capacity(n: usize) -> Self {
        Arena {
            nodes: upfront(n),
            free: NIL,
            index: HashTable::with_capacity(n.min(UPFRONT)),
            hasher: DefaultHashBuilder::default(),
            live: 0,
            limit: n,
        }
    }

    /// The most live keys expected (what [`with_capacity`](Self::with_capacity)
    /// was given): vectors indexed by node grow towards it too.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Node slots allocated (for tests of the growth).
    #[cfg(test)]
    pub fn allocated(&self) -> usize {
        self.nodes.capacity()
    }

    #[inline]
    fn hash(&self, key: u64) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The node holding `key`, if any.
    #[inline]
    pub fn find(&self, key: u64) -> Option<u32> {
        let nodes = &self.nodes;
        self.index.find(self.hash(key), |&i| nodes[i as usize].key == key).copied()
    }

    /// Starts loading `key`'s index slot and node into the CPU's caches. The
    /// index is probed (its control bytes and slot must be read to learn the
    /// node), but the node itself is only prefetched: no key compare waits on
    /// it. The first slot whose hash tag matches is taken as the node (rarely
    /// another key's: harmless for a hint).
    #[inline]
    pub fn prefetch(&self, key: u64) {
        if let Some(&idx) = self.index.iter_hash(self.hash(key)).next() {
            prefetch_line(&self.nodes[idx as usize]);
        }
    }

    /// Starts loading node `idx` into the CPU's caches.
    #[inline]
    pub fn prefetch_node(&self, idx: u32) {
        if let Some(node) = self.nodes.get(idx as usize) {
            prefetch_line(node);
        }
    }

    /// Adds a node for `key` (which must not be present) and indexes it.
    pub fn insert(&mut self, key: u64, val: T) -> u32 {
        debug_assert!(self.find(key).is_none(), "key {key} inserted twice");
        let node = Node { key, links: Links::NONE, val };
        let idx = if self.free != NIL {
            let idx = self.free;
            self.free = self.nodes[idx as usize].links.next;
            self.nodes[idx as usize] = node;
            idx
        } else {
            assert!(self.nodes.len() < NIL as usize, "more than 2^32-1 tracked keys");
            let n = self.nodes.len() + 1;
            reserve_for(&mut self.nodes, n, self.limit);
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        };
        let hash = self.hash(key);
        let nodes = &self.nodes;
        let hasher = &self.hasher;
        self.index.insert_unique(hash, idx, |&i| hasher.hash_one(nodes[i as usize].key));
        self.live += 1;
        idx
    }

    /// Unindexes and frees node `idx` (which must not be linked in a list). Returns its key.
    pub fn remove(&mut self, idx: u32) -> u64 {
        let key = self.nodes[idx as usize].key;
        let hash = self.hash(key);
        match self.index.find_entry(hash, |&i| i == idx) {
            Ok(entry) => {
                entry.remove();
            }
            Err(_) => panic!("node {idx} not indexed"),
        }
        self.nodes[idx as usize].links = Links { prev: NIL, next: self.free };
        self.free = idx;
        self.live -= 1;
        key
    }

    /// Gives node `idx` (which must not be linked in a list) to `key` with `val`:
    /// a [`remove`](Self::remove) and an [`insert`](Self::insert) that reuse the
    /// node, for a full cache replacing its victim. Returns the old key.
    pub fn rekey(&mut self, idx: u32, key: u64, val: T) -> u64 {
        debug_assert!(self.find(key).is_none(), "key {key} inserted twice");
        let old = self.nodes[idx as usize].key;
        match self.index.find_entry(self.hash(old), |&i| i == idx) {
            Ok(entry) => {
                entry.remove();
            }
            Err(_) => panic!("node {idx} not indexed"),
        }
        self.nodes[idx as usize] = Node { key, links: Links::NONE, val };
        let hash = self.hash(key);
        let nodes = &self.nodes;
        let hasher = &self.hasher;
        self.index.insert_unique(hash, idx, |&i| hasher.hash_one(nodes[i as usize].key));
        old
    }

    #[inline]
    pub fn key(&self, idx: u32) -> u64 {
        self.nodes[idx as usize].key
    }
    #[inline]
    pub fn val(&self, idx: u32) -> &T {
        &self.nodes[idx as usize].val
    }
    #[inline]
    pub fn val_mut(&mut self, idx: u32) -> &mut T {
        &mut self.nodes[idx as usize].val
    }
    /// Number of live nodes.
    pub fn len(&self) -> usize {
        self.live
    }
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

impl<T> LinkStore for Arena<T> {
    #[inline]
    fn links(&self, idx: u32) -> &Links {
        &self.nodes[idx as usize].links
    }
    #[inline]
    fn links_mut(&mut self, idx: u32) -> &mut Links {
        &mut self.nodes[idx as usize].links
    }
}

impl LinkStore<InVal> for Arena<Links> {
    #[inline]
    fn links(&self, idx: u32) -> &Links {
        &self.nodes[idx as usize].val
    }
    #[inline]
    fn links_mut(&mut self, idx: u32) -> &mut Links {
        &mut self.nodes[idx as usize].val
    }
}

/// A doubly linked list of nodes of a [`LinkStore`], through their `W` links.
/// Front = most recent by convention.
#[derive(Debug)]
pub struct List<W: Which = Own> {
    head: u32,
    tail: u32,
    len: u32,
    which: PhantomData<W>,
}

impl<W: Which> Clone for List<W> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<W: Which> Copy for List<W> {}

impl<W: Which> Default for List<W> {
    fn default() -> Self {
        List { head: NIL, tail: NIL, len: 0, which: PhantomData }
    }
}

impl List {
    pub fn new() -> Self {
        Self::default()
    }
}

impl<W: Which> List<W> {
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Front (most recent) node.
    #[inline]
    pub fn front(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }
    /// Back (least recent) node.
    #[inline]
    pub fn back(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    #[inline]
    pub fn push_front<S: LinkStore<W> + ?Sized>(&mut self, a: &mut S, idx: u32) {
        let old = self.head;
        *a.links_mut(idx) = Links { prev: NIL, next: old };
        if old != NIL {
            a.links_mut(old).prev = idx;
        } else {
            self.tail = idx;
        }
        self.head = idx;
        self.len += 1;
    }

    #[inline]
    pub fn push_back<S: LinkStore<W> + ?Sized>(&mut self, a: &mut S, idx: u32) {
        let old = self.tail;
        *a.links_mut(idx) = Links { prev: old, next: NIL };
        if old != NIL {
            a.links_mut(old).next = idx;
        } else {
            self.head = idx;
        }
        self.tail = idx;
        self.len += 1;
    }

    /// Links `idx` (on no list) right after `at` (in this list), towards the back.
    #[inline]
    pub fn insert_after<S: LinkStore<W> + ?Sized>(&mut self, a: &mut S, at: u32, idx: u32) {
        let next = a.links(at).next;
        *a.links_mut(idx) = Links { prev: at, next };
        a.links_mut(at).next = idx;
        if next != NIL {
            a.links_mut(next).prev = idx;
        } else {
            self.tail = idx;
        }
        self.len += 1;
    }

    /// Unlinks `idx`, which must be in this list.
    #[inline]
    pub fn unlink<S: LinkStore<W> + ?Sized>(&mut self, a: &mut S, idx: u32) {
        let Links { prev, next } = *a.links(idx);
        if prev != NIL {
            a.links_mut(prev).next = next;
        } else {
            debug_assert_eq!(self.head, idx);
            self.head = next;
        }
        if next != NIL {
            a.links_mut(next).prev = prev;
        } else {
            debug_assert_eq!(self.tail, idx);
            self.tail = prev;
        }
        *a.links_mut(idx) = Links::NONE;
        self.len -= 1;
    }

    /// Moves `idx` (in this list) to the front.
    #[inline]
    pub fn move_to_front<S: LinkStore<W> + ?Sized>(&mut self, a: &mut S, idx: u32) {
        if self.head != idx {
            self.unlink(a, idx);
            self.push_front(a, idx);
        }
    }

    /// Unlinks and returns the back node.
    #[inline]
    pub fn pop_back<S: LinkStore<W> + ?Sized>(&mut self, a: &mut S) -> Option<u32> {
        let idx = self.back()?;
        self.unlink(a, idx);
        Some(idx)
    }

    /// Unlinks and returns the front node.
    #[inline]
    pub fn pop_front<S: LinkStore<W> + ?Sized>(&mut self, a: &mut S) -> Option<u32> {
        let idx = self.front()?;
        self.unlink(a, idx);
        Some(idx)
    }

    /// The node after `idx` (towards the back).
    #[inline]
    pub fn next_of<S: LinkStore<W> + ?Sized>(&self, a: &S, idx: u32) -> Option<u32> {
        let n = a.links(idx).next;
        (n != NIL).then_some(n)
    }

    /// The node before `idx` (towards the front).
    #[inline]
    pub fn prev_of<S: LinkStore<W> + ?Sized>(&self, a: &S, idx: u32) -> Option<u32> {
        let p = a.links(idx).prev;
        (p != NIL).then_some(p)
    }

    /// The nodes from front to back (the store stays borrowed meanwhile, so
    /// no list can change).
    pub fn nodes<'a, S: LinkStore<W> + ?Sized>(&self, a: &'a S) -> impl Iterator<Item = u32> + 'a {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            let idx = cur;
            if idx == NIL {
                return None;
            }
            cur = a.links(idx).next;
            Some(idx)
        })
    }
}

impl<W: Which> List<W> {
    /// Unlinks and frees the node of `key`, which must be in this list if it is in
    /// the arena at all. Returns whether it was there.
    pub fn remove_key<T>(&mut self, a: &mut Arena<T>, key: u64) -> bool
    where
        Arena<T>: LinkStore<W>,
    {
        match a.find(key) {
            Some(idx) => {
                self.unlink(a, idx);
                a.remove(idx);
                true
            }
            None => false,
        }
    }

    /// Keys from front to back (for tests and debugging).
    pub fn keys<T>(&self, a: &Arena<T>) -> Vec<u64>
    where
        Arena<T>: LinkStore<W>,
    {
        let mut out = Vec::with_capacity(self.len());
        out.extend(self.nodes(a).map(|idx| a.key(idx)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_share_an_arena() {
        let mut a: Arena<()> = Arena::with_capacity(4);
        let (mut l1, mut l2) = (List::new(), List::new());
        let x = a.insert(10, ());
        let y = a.insert(20, ());
        let z = a.insert(30, ());
        l1.push_front(&mut a, x);
        l1.push_front(&mut a, y);
        l2.push_back(&mut a, z);
        assert_eq!(l1.keys(&a), vec![20, 10]);
        l1.move_to_front(&mut a, x);
        assert_eq!(l1.keys(&a), vec![10, 20]);
        let back = l1.pop_back(&mut a).unwrap();
        l2.push_front(&mut a, back);
        assert_eq!(l2.keys(&a), vec![20, 30]);
        assert_eq!(a.find(20), Some(y));
        l2.unlink(&mut a, y);
        assert_eq!(a.remove(y), 20);
        assert_eq!(a.find(20), None);
        let w = a.insert(40, ());
        assert_eq!(w, y, "freed slot is reused");
        assert_eq!(a.len(), 3);
    }

    #[test]
    fn room_grows_with_use_up_to_the_limit() {
        // A cache of 2^31 pages reserves nothing like it before use.
        let mut a: Arena<()> = Arena::with_capacity(1 << 31);
        assert_eq!(a.allocated(), UPFRONT);
        for k in 0..3 {
            a.insert(k, ());
        }
        assert_eq!(a.allocated(), UPFRONT);
        // Small limits are reserved whole; growth stops at the limit, no slack.
        let mut a: Arena<()> = Arena::with_capacity(UPFRONT + 5);
        assert_eq!(a.allocated(), UPFRONT);
        for k in 0..UPFRONT as u64 + 5 {
            a.insert(k, ());
        }
        assert_eq!(a.allocated(), UPFRONT + 5);
        // Past the limit (a hint exceeded) it still doubles.
        a.insert(u64::MAX, ());
        assert_eq!(a.allocated(), 2 * (UPFRONT + 5));
        let mut v: Vec<u8> = upfront(10);
        assert_eq!(v.capacity(), 10);
        reserve_for(&mut v, 11, 10);
        assert!(v.capacity() >= 20);
    }

    #[test]
    fn rekey_moves_a_node_to_another_key() {
        let mut a: Arena<u8> = Arena::with_capacity(4);
        let (x, y) = (a.insert(10, 1), a.insert(20, 2));
        assert_eq!(a.rekey(x, 30, 3), 10);
        assert_eq!((a.find(10), a.find(30), a.find(20)), (None, Some(x), Some(y)));
        assert_eq!((a.key(x), *a.val(x), a.len()), (30, 3, 2));
        // the freed key can come back, in a node of its own
        let z = a.insert(10, 4);
        assert!(z != x && z != y);
        assert_eq!(a.find(10), Some(z));
    }

    #[test]
    fn nodes_run_front_to_back() {
        let mut a: Arena<()> = Arena::with_capacity(4);
        let mut l = List::new();
        assert_eq!(l.nodes(&a).count(), 0);
        let idx: Vec<u32> = (0..3).map(|k| a.insert(k, ())).collect();
        for &i in &idx {
            l.push_front(&mut a, i);
        }
        assert_eq!(l.nodes(&a).collect::<Vec<_>>(), vec![idx[2], idx[1], idx[0]]);
        assert_eq!(l.nodes(&a).map(|i| a.key(i)).collect::<Vec<_>>(), l.keys(&a));
    }

    #[test]
    fn second_links_and_other_stores() {
        // A node on two lists: its own links and the pair in its value.
        let mut a: Arena<Links> = Arena::with_capacity(4);
        let (mut own, mut second) = (List::new(), List::<InVal>::default());
        let x = a.insert(1, Links::NONE);
        let y = a.insert(2, Links::NONE);
        own.push_front(&mut a, x);
        own.push_front(&mut a, y);
        second.push_front(&mut a, y);
        second.push_front(&mut a, x);
        assert_eq!((own.keys(&a), second.keys(&a)), (vec![2, 1], vec![1, 2]));
        second.unlink(&mut a, x);
        assert_eq!((own.keys(&a), second.keys(&a)), (vec![2, 1], vec![2]));
        // A plain vector of links, with insertion after a node.
        struct V(Vec<Links>);
        impl LinkStore for V {
            fn links(&self, idx: u32) -> &Links {
                &self.0[idx as usize]
            }
            fn links_mut(&mut self, idx: u32) -> &mut Links {
                &mut self.0[idx as usize]
            }
        }
        let mut v = V(vec![Links::NONE; 4]);
        let mut l = List::new();
        l.push_front(&mut v, 0);
        l.insert_after(&mut v, 0, 2);
        l.insert_after(&mut v, 0, 1);
        l.push_back(&mut v, 3);
        assert_eq!(l.nodes(&v).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!((l.len(), l.back(), l.prev_of(&v, 3)), (4, Some(3), Some(2)));
    }
}
