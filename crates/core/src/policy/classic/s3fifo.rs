//! S3-FIFO: a small FIFO `S` that filters one-hit wonders, a main FIFO `M`
//! with reinsertion (CLOCK with a 2-bit counter), and a ghost FIFO `G` of keys
//! recently dropped from `S` (Yang et al., SOSP'23).
//!
//! - a hit adds one to the page's counter;
//! - a miss on a key remembered in `G` inserts the page into `M`, any other miss
//!   into `S`; new pages start at 0;
//! - to make room: if `M` is over its share (equivalently, with the cache full,
//!   `S` is under its share) or `S` is empty, evict from `M`, else from `S`;
//! - evicting from `S`: the oldest page moves to the head of `M` (counter reset
//!   to 0) if it was hit at least `threshold` times while in `S`; otherwise it
//!   leaves the cache and its key enters `G`. Repeat until a page has left;
//! - evicting from `M`: the oldest page with a non-zero counter goes back to
//!   the head with `min(counter, 2^bits - 1) - 1`; the first page at 0 leaves.
//!
//! Defaults are libCacheSim's: `small=10%`, `ghost=90%` (of the capacity, in
//! keys; ghosts do not count towards the capacity), `threshold=2`, and a 2-bit
//! counter (`bits=2`). Queue sizes are worked out as libCacheSim does in bytes
//! for 4 KiB objects: with `C` pages, `S` gets `s = trunc(C·4096·small)` bytes,
//! `M` gets `C·4096 − s`, `G` keeps `⌊trunc(C·4096·ghost)/4096⌋` keys. (`M` is
//! over its share when its pages take more bytes than that; `S`'s share only
//! matters through `M`'s, so it may be less than a page.)
//!
//! ## `variant=paper` (default): the SOSP'23 algorithm
//!
//! Every miss that is not a ghost hit goes to `S`, also before the cache first
//! fills. libCacheSim keeps the implementation used for the paper as
//! `S3FIFOv0`, and this variant has its miss counts wherever `S3FIFOv0` caches
//! anything (`S` over one page, e.g. more than 10 pages at `small=10%`). Where
//! `S` is one page or less, `S3FIFOv0` refuses every object; the paper's
//! algorithm runs at any capacity, and so does this variant (with `S` under a
//! page, each miss still enters `S`, and leaves it at the next eviction from `S`
//! unless it was hit `threshold` times).
//!
//! ## `variant=libcachesim`: libCacheSim's `S3FIFO` (`S3FIFO.c`)
//!
//! Miss counts equal libCacheSim's `S3FIFO` for unit-size objects, at every
//! capacity. Its choices, kept here:
//! - until the first eviction, a miss goes to `M` once `S` has reached its
//!   share (libCacheSim's comment: objects admitted before the cache first
//!   fills stay slightly longer). The paper always inserts into `S`;
//! - moving a page from `S` to `M` never evicts from `M` by itself: `M` may run
//!   over its share until the next eviction picks `M`;
//! - **nothing is cached when `S` is one page or less** (`small=10%` of at most
//!   10 pages): libCacheSim refuses an object as large as `S`, so every miss is
//!   declined ([`Replacement::insert`] returns false) and every access misses.
//!
//! Descriptions of S3-FIFO differ on how many hits in `S` earn the move to `M`
//! (the authors' blog illustrates it with a threshold of 1); `threshold` sets
//! it, 2 by default as in both libCacheSim versions.
//!
//! Memory per tracked key (resident or ghost): a 16-byte arena node (key,
//! links), 2 bytes of queue tag and counter in a side array indexed by node,
//! and the arena's hash index.

use crate::list::{cover, upfront, Arena, List};
use crate::policy::mode::rule_builders;
use crate::policy::{Access, BuildCtx, ParamInfo, PolicyInfo, Replacement, Spec, SpecError};

/// The object size libCacheSim is run with when we compare (4 KiB pages);
/// only used to reproduce its byte rounding of queue sizes.
const LCS_PAGE: u64 = 4096;

/// `trunc(capacity·4096·ratio)`: libCacheSim's size in bytes of a `ratio` share.
fn lcs_share_bytes(capacity: usize, ratio: f64) -> u64 {
    ((capacity as u64 * LCS_PAGE) as f64 * ratio) as u64
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Q {
    Small,
    Main,
    Ghost,
}

#[derive(Clone, Copy, Debug)]
struct Meta {
    q: Q,
    /// Hits, saturating at 255 (thresholds and caps are at most 255).
    freq: u8,
}

/// Queue sizes and knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct S3FifoConfig {
    /// `S`'s share in libCacheSim bytes (4096 per page).
    pub small_bytes: u64,
    /// `M`'s share in libCacheSim bytes.
    pub main_bytes: u64,
    /// Ghost keys kept.
    pub ghost: usize,
    /// Hits in `S` needed to move to `M`.
    pub threshold: u8,
    /// Counter cap in `M` (`2^bits - 1`).
    pub max_freq: u8,
    /// Before the first eviction, send misses to `M` once `S` is full (libCacheSim).
    pub fill_main: bool,
    /// Whether misses are cached at all (libCacheSim: only if `S` is over one page).
    pub admit: bool,
}

impl S3FifoConfig {
    /// libCacheSim's `S3FIFO` sizes and knobs for `capacity` pages.
    pub fn libcachesim(capacity: usize, small: f64, ghost: f64) -> S3FifoConfig {
        let small_bytes = lcs_share_bytes(capacity, small);
        let total = capacity as u64 * LCS_PAGE;
        S3FifoConfig {
            small_bytes,
            main_bytes: total - small_bytes.min(total),
            ghost: (lcs_share_bytes(capacity, ghost) / LCS_PAGE) as usize,
            threshold: 2,
            max_freq: 3,
            fill_main: true,
            admit: small_bytes > LCS_PAGE,
        }
    }

    /// The paper's algorithm with the same sizes: every miss goes to `S` and is cached.
    pub fn paper(capacity: usize, small: f64, ghost: f64) -> S3FifoConfig {
        S3FifoConfig { fill_main: false, admit: true, ..S3FifoConfig::libcachesim(capacity, small, ghost) }
    }
}

pub struct S3Fifo {
    arena: Arena<()>,
    /// Queue and counter of the key in arena node `i` (kept beside the arena so
    /// a node stays 16 bytes).
    meta: Vec<Meta>,
    /// Front = newest; back = next to leave.
    small: List,
    main: List,
    ghost: List,
    capacity: usize,
    cfg: S3FifoConfig,
    has_evicted: bool,
}

impl S3Fifo {
    pub fn new(capacity: usize, cfg: S3FifoConfig) -> Self {
        let capacity = capacity.max(1);
        S3Fifo {
            arena: Arena::with_capacity(capacity + cfg.ghost),
            meta: upfront(capacity + cfg.ghost),
            small: List::new(),
            main: List::new(),
            ghost: List::new(),
            capacity,
            cfg,
            has_evicted: false,
        }
    }

    fn resident(&self) -> usize {
        self.small.len() + self.main.len()
    }

    /// Remembers a key dropped from `S`, forgetting the oldest ghost if full.
    fn remember(&mut self, idx: u32) {
        if self.cfg.ghost == 0 {
            self.arena.remove(idx);
            return;
        }
        self.meta[idx as usize] = Meta { q: Q::Ghost, freq: 0 };
        self.ghost.push_front(&mut self.arena, idx);
        if self.ghost.len() > self.cfg.ghost {
            let old = self.ghost.pop_back(&mut self.arena).expect("ghost queue is not empty");
            self.arena.remove(old);
        }
    }

    /// Frees one page from `S`: pages hit often enough move to `M` until one leaves.
    fn evict_small(&mut self, evicted: &mut Vec<u64>) {
        while let Some(idx) = self.small.pop_back(&mut self.arena) {
            let m = &mut self.meta[idx as usize];
            if m.freq >= self.cfg.threshold {
                *m = Meta { q: Q::Main, freq: 0 };
                self.main.push_front(&mut self.arena, idx);
            } else {
                evicted.push(self.arena.key(idx));
                self.remember(idx);
                return;
            }
        }
    }

    /// Frees one page from `M`: pages with a non-zero counter get another round.
    fn evict_main(&mut self, evicted: &mut Vec<u64>) {
        while let Some(idx) = self.main.back() {
            let m = &mut self.meta[idx as usize];
            if m.freq == 0 {
                self.main.unlink(&mut self.arena, idx);
                evicted.push(self.arena.remove(idx));
                return;
            }
            m.freq = m.freq.min(self.cfg.max_freq) - 1;
            self.main.move_to_front(&mut self.arena, idx);
        }
    }

    fn evict(&mut self, evicted: &mut Vec<u64>) {
        self.has_evicted = true;
        if self.main.len() as u64 * LCS_PAGE > self.cfg.main_bytes || self.small.is_empty() {
            self.evict_main(evicted);
        } else {
            self.evict_small(evicted);
        }
    }

    /// Keys in each queue, front to back (for tests).
    pub fn queues(&self) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
        (self.small.keys(&self.arena), self.main.keys(&self.arena), self.ghost.keys(&self.arena))
    }
}

impl Replacement for S3Fifo {
    #[inline]
    fn touch(&mut self, a: &Access, _dirty: bool, _evicted: &mut Vec<u64>) -> bool {
        match self.arena.find(a.key) {
            Some(idx) => {
                let m = &mut self.meta[idx as usize];
                if m.q == Q::Ghost {
                    return false;
                }
                m.freq = m.freq.saturating_add(1);
                true
            }
            None => false,
        }
    }

    #[inline]
    fn insert(&mut self, a: &Access, _dirty: bool, evicted: &mut Vec<u64>) -> bool {
        if !self.cfg.admit {
            // libCacheSim: `S` cannot take the page, so it is refused outright
            // (and as nothing is ever cached, there are no ghosts either).
            return false;
        }
        // A ghost key leaves G before anything is evicted (libCacheSim removes it
        // during the lookup), so this miss's evictions cannot push it out.
        let ghost_hit = match self.arena.find(a.key) {
            Some(idx) => {
                debug_assert_eq!(self.meta[idx as usize].q, Q::Ghost, "insert of a resident key");
                self.ghost.unlink(&mut self.arena, idx);
                self.arena.remove(idx);
                true
            }
            None => false,
        };
        while self.resident() >= self.capacity {
            self.evict(evicted);
        }
        let to_main = ghost_hit
            || (self.cfg.fill_main && !self.has_evicted && self.small.len() as u64 * LCS_PAGE >= self.cfg.small_bytes);
        let idx = self.arena.insert(a.key, ());
        let m = Meta { q: if to_main { Q::Main } else { Q::Small }, freq: 0 };
        // Node indices are dense (freed nodes are reused), so this grows only
        // until the arena has reached its largest size.
        cover(&mut self.meta, idx as usize, self.arena.limit(), m);
        self.meta[idx as usize] = m;
        if to_main {
            self.main.push_front(&mut self.arena, idx);
        } else {
            self.small.push_front(&mut self.arena, idx);
        }
        true
    }

    fn remove(&mut self, key: u64, _evicted: &mut Vec<u64>) -> bool {
        let Some(idx) = self.arena.find(key) else { return false };
        match self.meta[idx as usize].q {
            Q::Small => self.small.unlink(&mut self.arena, idx),
            Q::Main => self.main.unlink(&mut self.arena, idx),
            Q::Ghost => return false,
        }
        self.arena.remove(idx);
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.arena.find(key).is_some_and(|idx| self.meta[idx as usize].q != Q::Ghost)
    }
    fn len(&self) -> usize {
        self.resident()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    fn ghosts(&self) -> usize {
        self.ghost.len()
    }
}

fn make(spec: &Spec, ctx: &BuildCtx) -> Result<S3Fifo, SpecError> {
    let small = spec.ratio("small")?;
    if small >= 1.0 {
        return Err(spec.invalid("small", "must be below 100% (the main queue needs room)"));
    }
    if small <= 0.0 {
        return Err(spec.invalid("small", "must be above 0 (the small queue is the filter)"));
    }
    let ghost = spec.ratio("ghost")?;
    let threshold = spec.uint("threshold")?;
    if threshold > 255 {
        return Err(spec.invalid("threshold", "at most 255"));
    }
    let bits = spec.uint("bits")?;
    if !(1..=8).contains(&bits) {
        return Err(spec.invalid("bits", "between 1 and 8"));
    }
    let capacity = ctx.capacity.max(1);
    let mut cfg = match spec.choice("variant", &["paper", "libcachesim"])?.as_str() {
        "libcachesim" => S3FifoConfig::libcachesim(capacity, small, ghost),
        _ => S3FifoConfig::paper(capacity, small, ghost),
    };
    cfg.threshold = threshold as u8;
    cfg.max_freq = ((1u32 << bits) - 1) as u8;
    Ok(S3Fifo::new(capacity, cfg))
}

rule_builders!(make);

pub const INFO: PolicyInfo = PolicyInfo {
    name: "s3fifo",
    about: "S3-FIFO: small FIFO filter + main FIFO with reinsertion + ghost FIFO (Yang et al.)",
    params: &[
        ParamInfo { name: "small", default: "10%", about: "small queue share of the capacity (small-size-ratio)" },
        ParamInfo { name: "ghost", default: "90%", about: "ghost keys as a share of the capacity (ghost-size-ratio)" },
        ParamInfo {
            name: "threshold",
            default: "2",
            about: "hits in the small queue to move to main (move-to-main-threshold)",
        },
        ParamInfo {
            name: "bits",
            default: "2",
            about: "main queue counter width; reinsertion keeps min(hits, 2^bits-1)-1",
        },
        ParamInfo {
            name: "variant",
            default: "paper",
            about: "paper (every miss to small; libCacheSim S3FIFOv0 where that caches) or libcachesim (S3FIFO: \
                    fills main once small is full before the first eviction; caches nothing with small <= 1 page)",
        },
    ],
    build,
    rule: Some(rule),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::registry::build as build_spec;
    use crate::policy::testing::{assert_bad_values, misses, run_keys};
    use crate::policy::Mode;

    #[test]
    fn sizes_follow_libcachesim_rounding() {
        // 20 pages: S 2 pages (8192 bytes), M 18, G 18 keys.
        let c = S3FifoConfig::libcachesim(20, 0.1, 0.9);
        assert_eq!((c.small_bytes, c.main_bytes, c.ghost), (8192, 73728, 18));
        // 11 pages: S is 1.1 pages (4505 bytes), enough to admit.
        assert_eq!(S3FifoConfig::libcachesim(11, 0.1, 0.9).small_bytes, 4505);
        assert!(S3FifoConfig::libcachesim(11, 0.1, 0.9).admit);
        // 10 pages: S is exactly one page, too small for libCacheSim to admit a page.
        assert!(!S3FifoConfig::libcachesim(10, 0.1, 0.9).admit);
        assert!(S3FifoConfig::paper(10, 0.1, 0.9).admit);
    }

    #[test]
    fn by_hand() {
        // 20 pages: S 2 pages, M 18 pages share, G 18 keys.
        let mut s = S3Fifo::new(20, S3FifoConfig::libcachesim(20, 0.1, 0.9));
        // Fill: 1 2 go to S; S is then full (2 pages = its share), and before the
        // first eviction libCacheSim sends 3..20 to M.
        let fill: Vec<u64> = (1..=20).collect();
        assert_eq!(run_keys(&mut s, &fill), vec![false; 20]);
        assert_eq!(s.queues().0, vec![2, 1]);
        // Hit 1 twice (threshold 2), 3 once.
        assert_eq!(run_keys(&mut s, &[1, 1, 3]), vec![true; 3]);
        // 21: M (18) is not over its share and S is not empty -> evict from S:
        // 1 was hit twice -> moves to M (counter 0); 2 was not -> leaves, key to G.
        assert_eq!(run_keys(&mut s, &[21]), vec![false]);
        let main: Vec<u64> = std::iter::once(1).chain((3..=20).rev()).collect();
        assert_eq!(s.queues(), (vec![21], main, vec![2]));
        // 22: M holds 19 pages > 18 -> evict from M: 3 (counter 1) goes round
        // with 0; 4 leaves.
        assert_eq!(run_keys(&mut s, &[22]), vec![false]);
        let (sq, mq, gq) = s.queues();
        assert_eq!(sq, vec![22, 21]);
        assert_eq!(mq.first(), Some(&3));
        assert!(!mq.contains(&4) && mq.contains(&5));
        assert_eq!(gq, vec![2]);
        // 2 comes back: ghost hit -> straight into M. Room: M (18) is back within
        // its share, so S gives up its oldest page: 21 (never hit) leaves, to G.
        assert_eq!(run_keys(&mut s, &[2]), vec![false]);
        let (sq, mq, gq) = s.queues();
        assert_eq!(sq, vec![22]);
        assert_eq!(mq.first(), Some(&2));
        assert!(mq.contains(&5));
        assert_eq!(gq, vec![21]);
        assert_eq!(s.len(), 20);
    }

    #[test]
    fn paper_variant_always_fills_small() {
        let mut s = S3Fifo::new(20, S3FifoConfig::paper(20, 0.1, 0.9));
        let fill: Vec<u64> = (1..=20).collect();
        run_keys(&mut s, &fill);
        assert_eq!(s.queues().0.len(), 20);
        // 21: S is over its share -> evict from S: 1 leaves (to G).
        assert_eq!(run_keys(&mut s, &[21, 1]), vec![false, false]);
        // 1 was a ghost: it went to M, after 2 left S to make room.
        let (sq, mq, gq) = s.queues();
        assert_eq!(mq, vec![1]);
        assert_eq!(sq.len(), 19);
        assert_eq!(gq, vec![2]);
    }

    #[test]
    fn bad_params() {
        let ctx = BuildCtx { capacity: 100, mode: Mode::WriteBack, page_bytes: 4096 };
        assert_bad_values(
            &[
                "s3fifo(small=100%)",
                "s3fifo(small=0)",
                "s3fifo(ghost=2)",
                "s3fifo(threshold=256)",
                "s3fifo(threshold=-1)",
                "s3fifo(bits=0)",
                "s3fifo(bits=9)",
                "s3fifo(variant=v2)",
            ],
            &ctx,
        );
        // Every capacity builds, in both variants.
        for capacity in 1..=10 {
            let tiny = BuildCtx { capacity, mode: Mode::WriteBack, page_bytes: 4096 };
            for ok in ["s3fifo", "s3fifo(variant=libcachesim)", "s3fifo(small=20%)"] {
                assert!(build_spec(ok, &tiny).is_ok(), "{ok} at {capacity} pages");
            }
        }
        assert!(build_spec("s3fifo(ghost=0,threshold=1,bits=1,variant=paper)", &ctx).is_ok());
    }

    #[test]
    fn libcachesim_declines_everything_with_a_one_page_small_queue() {
        // 8 pages (libCacheSim's S3FIFO(8·4096) with 4096-byte objects): S gets
        // 3276 bytes, and every access misses.
        let keys: Vec<u64> = [1, 2, 1, 1, 3, 2, 2, 1].repeat(3);
        let mut s = S3Fifo::new(8, S3FifoConfig::libcachesim(8, 0.1, 0.9));
        assert_eq!(run_keys(&mut s, &keys), vec![false; keys.len()]);
        assert_eq!((s.len(), s.ghosts()), (0, 0));
        let ctx = BuildCtx { capacity: 8, mode: Mode::WriteBack, page_bytes: 4096 };
        let (mut p, _) = build_spec("s3fifo(variant=libcachesim)", &ctx).unwrap();
        assert_eq!(misses(p.as_mut(), &keys), keys.len());
    }

    #[test]
    fn paper_variant_caches_at_every_capacity() {
        // 1 page: S's share is 409 bytes, M's 3687. 1 enters S and is hit once; 2
        // evicts it (to G) and is hit twice. 1 comes back from G: 2 moves to M
        // (two hits), which is then over its share and drops 2; 1 enters M.
        let mut s = S3Fifo::new(1, S3FifoConfig::paper(1, 0.1, 0.9));
        assert_eq!(run_keys(&mut s, &[1, 1, 2, 2, 2, 1, 1]), vec![false, true, false, true, true, false, true]);
        for c in 1..=10 {
            let mut s = S3Fifo::new(c, S3FifoConfig::paper(c, 0.1, 0.9));
            // Each key twice in a row: the second access hits.
            let keys: Vec<u64> = (0..400u64).map(|i| (i / 2 * 7) % 23).collect();
            let hits = run_keys(&mut s, &keys).into_iter().filter(|&h| h).count();
            assert_eq!(hits, 200, "{c} pages");
        }
    }

    #[test]
    fn compact_nodes() {
        // 16-byte node + 2 bytes of metadata per tracked key (plus the hash index).
        assert_eq!(std::mem::size_of::<crate::list::Node<()>>(), 16);
        assert_eq!(std::mem::size_of::<Meta>(), 2);
    }
}
