//! Open-loop queueing replay: the trace's requests arrive at their timestamps,
//! wait in the device's native command queue (NCQ), and are served one at a
//! time by the backing device model, so a run reports what the host sees —
//! latency, IOPS, bandwidth, queue length (paper 002 §4) — and NCQ-aware
//! policies (QLRU) get their lookahead.
//!
//! # The model
//!
//! - **Arrivals.** Request `i` arrives at `(t_i − t_0) · iat_scale`, where
//!   `t_0` is the first request's timestamp: every inter-arrival time is
//!   multiplied by the scaling factor (paper 002 §4.2.3 scales them to move
//!   from a busy device to an idle one). Scale 1 is the trace's own timing;
//!   paper 002 calls 1 the busy state with a full NCQ, which here is whatever
//!   scale (or generator `iat`) keeps the NCQ full, e.g. scale 0. Arrivals are
//!   in trace order: a timestamp earlier than the one before it is taken as
//!   equal to it. A trace whose timestamps are all equal (key traces,
//!   generators with `iat=0`) arrives all at once (reported as `all_at_once`):
//!   the NCQ fills at once and the rest wait in the host FIFO, so the run
//!   measures the device's throughput at full queue.
//! - **The NCQ** holds at most `depth` commands, counted from the moment a
//!   command enters until it completes (a SATA NCQ tag is held until
//!   completion, so the command in service is one of them). An arrival that
//!   finds it full waits in a host FIFO; its latency counts from its arrival.
//! - **Entering the NCQ** calls [`Simulator::queued`] (QLRU learns then, not at
//!   service). A command entering at the very instant another is dispatched
//!   enters first.
//! - **Service.** The device serves the NCQ's commands one at a time, in FIFO
//!   order (no reordering: an SSD has no seek to save, and paper 002 does not
//!   reorder). Paper 002 Table 1's 8 channels are *not* modelled: channel
//!   parallelism would stripe one command's pages over the channels, and our
//!   device models charge each page I/O in sequence; the times here are those
//!   of one channel, so absolute IOPS are pessimistic, but every policy is
//!   charged alike. At dispatch all of the request's page accesses go through
//!   the policy at once ([`Simulator::request`]); its service time is the
//!   device time that returns (misses fetched, dirty pages written back, GC
//!   they trigger) plus a buffer transfer time per read or written page, the
//!   DRAM preset's per-page latency ([`MEMORY_PRESETS`]: 100 ns per 4 KiB),
//!   since in an SSD all data passes through the controller's DRAM buffer —
//!   so a full hit is cheap but not free. A trim moves no data: it costs only
//!   its device time.
//! - **Latency** = completion − arrival. The *average queue length* is the
//!   time-weighted mean number of commands in the NCQ over the makespan (first
//!   arrival to last completion): Σ(completion − entry) / makespan. IOPS =
//!   completed / makespan; bandwidth = bytes read and written / makespan.
//!   The final drain of dirty pages happens after the last completion and is
//!   not in these times (it is in the device report).
//!
//! Latency percentiles come from an HDR histogram (3 significant digits);
//! mean and maximum are exact. The loop allocates nothing per request: the
//! queues are rings of `depth` entries, built once.

use super::future::{next_uses, NextUses};
use super::{pages_of, SimError, Simulator};
use crate::device::MEMORY_PRESETS;
use crate::metrics::QueueReport;
use crate::trace::{MemoryReader, Op, Request, TraceReader, Unit, BATCH};
use crate::Nanos;
use hdrhistogram::Histogram;
use std::collections::VecDeque;

/// The deepest NCQ accepted: paper 002 §4.1 goes up to 512 (SATA allows 32,
/// non-standard SSDs 128).
pub const MAX_DEPTH: u32 = 512;

/// Queueing settings of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueSpec {
    /// NCQ depth, 1..=[`MAX_DEPTH`].
    pub depth: u32,
    /// Factor on inter-arrival times: finite, ≥ 0 (0 = all at once).
    pub iat_scale: f64,
}

impl QueueSpec {
    pub fn check(&self) -> Result<(), SimError> {
        if !(1..=MAX_DEPTH).contains(&self.depth) {
            return Err(SimError::Config(format!("queue depth {} is out of range 1..={MAX_DEPTH}", self.depth)));
        }
        if !self.iat_scale.is_finite() || self.iat_scale < 0.0 {
            return Err(SimError::Config(format!(
                "inter-arrival scale {} must be a finite number ≥ 0",
                self.iat_scale
            )));
        }
        Ok(())
    }
}

/// Buffer transfer time of one page of `page_bytes`: the DRAM preset's
/// per-page latency, per DRAM page the cache page spans.
fn buffer_ns(page_bytes: u64, op: Op) -> Nanos {
    let dram = MEMORY_PRESETS[0].params;
    debug_assert_eq!(MEMORY_PRESETS[0].name, "dram");
    let per = match op {
        Op::Read => dram.read_ns_per_page,
        Op::Write => dram.write_ns_per_page,
        Op::Trim => return 0,
    };
    page_bytes.div_ceil(dram.page_bytes).max(1) * per
}

/// Replays `requests` through `sim` (which should have a backing device: else
/// only buffer time is charged) as an open queueing system; returns what the
/// host saw. The caller finishes `sim` (drain, counters) afterwards. (Copies
/// the requests: [`replay_reader`] streams.)
pub fn replay(
    sim: &mut Simulator,
    requests: &[Request],
    unit: Unit,
    spec: &QueueSpec,
) -> Result<QueueReport, SimError> {
    if sim.policy.needs_future() && sim.future.is_none() {
        sim.future = Some(NextUses::in_memory(next_uses(requests, unit, sim.cfg.page_bytes)?));
    }
    replay_reader(sim, &mut MemoryReader::new(requests.into(), unit), spec)
}

/// The requests of a queueing replay, read as they are needed: the commands
/// from the one in service to the last that entered the NCQ (at most `depth`)
/// and one batch of the reader, so memory does not grow with the trace.
struct Window<'r> {
    reader: &'r mut dyn TraceReader,
    batch: Vec<Request>,
    /// Requests of `batch` moved to `held` already.
    used: usize,
    /// Requests `first..first + held.len()`.
    held: VecDeque<Request>,
    first: usize,
    ended: bool,
    /// The first request's time, and whether every request so far has it.
    t0: Option<Nanos>,
    same_time: bool,
}

impl<'r> Window<'r> {
    fn new(reader: &'r mut dyn TraceReader) -> Window<'r> {
        Window {
            reader,
            batch: Vec::with_capacity(BATCH),
            used: 0,
            held: VecDeque::new(),
            first: 0,
            ended: false,
            t0: None,
            same_time: true,
        }
    }

    /// Request `j` (not yet released), or `None` past the end of the trace.
    fn get(&mut self, j: usize) -> Result<Option<Request>, SimError> {
        debug_assert!(j >= self.first);
        while self.first + self.held.len() <= j {
            if self.used == self.batch.len() {
                self.used = 0;
                if self.ended || self.reader.read_batch(&mut self.batch, BATCH)? == 0 {
                    self.batch.clear();
                    self.ended = true;
                    return Ok(None);
                }
            }
            let r = self.batch[self.used];
            self.used += 1;
            let t0 = *self.t0.get_or_insert(r.time);
            self.same_time &= r.time == t0;
            self.held.push_back(r);
        }
        Ok(Some(self.held[j - self.first]))
    }

    /// Forgets requests up to `i`, included.
    fn release_through(&mut self, i: usize) {
        while self.first <= i && self.held.pop_front().is_some() {
            self.first += 1;
        }
    }
}

/// [`replay`] over a reader, streaming. An offline policy (Belady) needs its
/// next uses given first ([`Simulator::with_future`]).
pub fn replay_reader(
    sim: &mut Simulator,
    reader: &mut dyn TraceReader,
    spec: &QueueSpec,
) -> Result<QueueReport, SimError> {
    spec.check()?;
    if sim.policy.needs_future() && sim.future.is_none() {
        return Err(SimError::Config("an offline policy's queueing replay needs its next uses first".into()));
    }
    let unit = reader.unit();
    let page_bytes = sim.cfg.page_bytes;
    let buf_read = buffer_ns(page_bytes, Op::Read);
    let buf_write = buffer_ns(page_bytes, Op::Write);
    let depth = spec.depth as usize;
    let mut window = Window::new(reader);
    let t0 = window.get(0)?.map_or(0, |r| r.time);
    let scale = spec.iat_scale;
    let arrival_of = |r: &Request| -> Nanos {
        let gap = r.time.saturating_sub(t0);
        if scale == 1.0 {
            gap
        } else {
            // (saturates at u64::MAX; rounding keeps scale 1 and hand-made times exact)
            (gap as f64 * scale).round() as Nanos
        }
    };

    // Rings indexed by command number mod depth: arrival and NCQ entry of the
    // commands in the NCQ, completion of the last `depth` commands served.
    let mut arrive = vec![0 as Nanos; depth];
    let mut enter = vec![0 as Nanos; depth];
    let mut done = vec![0 as Nanos; depth];
    let mut hist = Histogram::<u64>::new_with_bounds(1, u64::MAX, 3).expect("valid histogram bounds");
    let mut next_in = 0usize; // the next command to enter the NCQ
    let mut last_arrival: Nanos = 0;
    let mut prev_done: Nanos = 0;
    let (mut busy, mut in_ncq, mut waited, mut latency_sum) = (0u128, 0u128, 0u128, 0u128);
    let (mut max_wait, mut max_latency) = (0 as Nanos, 0 as Nanos);
    let (mut bytes, mut write_bytes) = (0u128, 0u128);

    let mut i = 0usize;
    while let Some(r) = window.get(i)? {
        // When command `j` can enter: its arrival, or when the command
        // `depth` before it completed and freed a slot.
        let entry_of = |j: usize, r: &Request, last_arrival: Nanos| -> (Nanos, Nanos) {
            let a = arrival_of(r).max(last_arrival);
            let free = if j >= depth { done[(j - depth) % depth] } else { 0 };
            (a, a.max(free))
        };
        if next_in == i {
            // The NCQ is empty: command i enters as soon as it can.
            let (a, e) = entry_of(i, &r, last_arrival);
            arrive[i % depth] = a;
            enter[i % depth] = e;
            last_arrival = a;
            sim.queued(&r, unit, i as u64)?;
            next_in += 1;
        }
        let start = enter[i % depth].max(prev_done);
        // Everything that entered the NCQ by the dispatch, in order: up to
        // `depth` commands held, counting i.
        while next_in < i + depth {
            let Some(q) = window.get(next_in)? else { break };
            let (a, e) = entry_of(next_in, &q, last_arrival);
            if e > start {
                break;
            }
            arrive[next_in % depth] = a;
            enter[next_in % depth] = e;
            last_arrival = a;
            sim.queued(&q, unit, next_in as u64)?;
            next_in += 1;
        }
        let device = sim.request(&r, unit)?;
        let pages = pages_of(&r, unit, page_bytes, i as u64)?.count;
        let (buffer, len) = match r.op {
            Op::Read => (pages * buf_read, req_bytes(&r, unit, page_bytes)),
            Op::Write => {
                let len = req_bytes(&r, unit, page_bytes);
                write_bytes += len as u128;
                (pages * buf_write, len)
            }
            Op::Trim => (0, 0),
        };
        bytes += len as u128;
        let service = device.saturating_add(buffer);
        let end = start.saturating_add(service);
        let (a, e) = (arrive[i % depth], enter[i % depth]);
        let latency = end - a;
        busy += service as u128;
        in_ncq += (end - e) as u128;
        waited += (e - a) as u128;
        max_wait = max_wait.max(e - a);
        latency_sum += latency as u128;
        max_latency = max_latency.max(latency);
        hist.saturating_record(latency);
        done[i % depth] = end;
        prev_done = end;
        window.release_through(i);
        i += 1;
    }
    let n = i;
    let all_at_once = n > 1 && window.same_time;

    let makespan = prev_done;
    let per_ns = |x: u128| {
        if makespan == 0 {
            0.0
        } else {
            x as f64 / makespan as f64
        }
    };
    let mean = |x: u128| if n == 0 { 0.0 } else { x as f64 / n as f64 };
    let quantile = |q: f64| if n == 0 { 0 } else { hist.value_at_quantile(q) };
    Ok(QueueReport {
        queue_depth: spec.depth,
        iat_scale: spec.iat_scale,
        all_at_once,
        completed_requests: n as u64,
        makespan_ns: makespan,
        device_busy_ns: busy.min(u64::MAX as u128) as u64,
        utilization: per_ns(busy),
        iops: per_ns(n as u128) * 1e9,
        bandwidth_mb_s: per_ns(bytes) * 1e9 / 1e6,
        write_bandwidth_mb_s: per_ns(write_bytes) * 1e9 / 1e6,
        latency_mean_ns: mean(latency_sum),
        latency_p50_ns: quantile(0.5),
        latency_p99_ns: quantile(0.99),
        latency_max_ns: max_latency,
        avg_queue_length: per_ns(in_ncq),
        mean_host_wait_ns: mean(waited),
        max_host_wait_ns: max_wait,
    })
}

/// Bytes a request moves.
fn req_bytes(r: &Request, unit: Unit, page_bytes: u64) -> u64 {
    match unit {
        Unit::Bytes => r.len as u64,
        Unit::Pages => r.len as u64 * page_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Counters;
    use crate::policy::registry::build;
    use crate::policy::BuildCtx;
    use crate::policy::Mode;
    use crate::sim::{Backing, SimConfig};

    const PAGE: u64 = 4096;

    fn req(time: Nanos, op: Op, page: u64) -> Request {
        Request { time, addr: page * PAGE, len: PAGE as u32, dev: 0, op }
    }

    fn writes_at(times: &[Nanos]) -> Vec<Request> {
        times.iter().enumerate().map(|(i, &t)| req(t, Op::Write, i as u64)).collect()
    }

    fn replay_with(
        policy: &str,
        mode: Mode,
        capacity: usize,
        device: &str,
        reqs: &[Request],
        depth: u32,
        iat_scale: f64,
    ) -> (QueueReport, Counters) {
        let (mut p, _) = build(policy, &BuildCtx { capacity, mode, page_bytes: 4096 }).unwrap();
        let mut b = Backing::new(device, reqs, Unit::Bytes, PAGE).unwrap();
        let mut sim = Simulator::new(p.as_mut(), SimConfig { page_bytes: PAGE }).with_backing(&mut b);
        let q = replay(&mut sim, reqs, Unit::Bytes, &QueueSpec { depth, iat_scale }).unwrap();
        (q, sim.finish())
    }

    /// Write-through LRU on DRAM with 900 ns writes: every single-page write
    /// costs 900 ns of device time + 100 ns of buffer time = 1 µs.
    fn fixed(times: &[Nanos], depth: u32, scale: f64) -> QueueReport {
        let reqs = writes_at(times);
        replay_with("lru", Mode::WriteThrough, 64, "dram(write=900ns)", &reqs, depth, scale).0
    }

    #[test]
    fn all_at_once_depth_1_2_4_by_hand() {
        // Completions 1, 2, 3, 4 µs whatever the depth (one FIFO server).
        for depth in [1, 2, 4, 32] {
            let q = fixed(&[0, 0, 0, 0], depth, 1.0);
            assert!(q.all_at_once);
            assert_eq!(q.completed_requests, 4);
            assert_eq!(q.makespan_ns, 4000, "depth {depth}");
            assert_eq!(q.device_busy_ns, 4000);
            assert_eq!(q.utilization, 1.0);
            assert_eq!(q.latency_mean_ns, 2500.0);
            assert_eq!(q.latency_max_ns, 4000);
        }
        // NCQ entries: depth 1 at 0, 1, 2, 3 µs; depth 2 at 0, 0, 1, 2; depth 4 all at 0.
        let q = fixed(&[0, 0, 0, 0], 1, 1.0);
        assert_eq!(q.avg_queue_length, 4000.0 / 4000.0);
        assert_eq!((q.mean_host_wait_ns, q.max_host_wait_ns), (1500.0, 3000));
        let q = fixed(&[0, 0, 0, 0], 2, 1.0);
        assert_eq!(q.avg_queue_length, (1000 + 2000 + 2000 + 2000) as f64 / 4000.0);
        assert_eq!((q.mean_host_wait_ns, q.max_host_wait_ns), (750.0, 2000));
        let q = fixed(&[0, 0, 0, 0], 4, 1.0);
        assert_eq!(q.avg_queue_length, (1000 + 2000 + 3000 + 4000) as f64 / 4000.0);
        assert_eq!((q.mean_host_wait_ns, q.max_host_wait_ns), (0.0, 0));
    }

    #[test]
    fn spaced_arrivals_and_the_scaling_factor_by_hand() {
        let times = [10_000, 10_500, 13_000, 13_100]; // rebased to the first: 0, 500, 3000, 3100
                                                      // Scale 1: served 0–1, 1–2, 3–4, 4–5 µs; latencies 1, 1.5, 1, 1.9 µs.
        let q = fixed(&times, 4, 1.0);
        assert!(!q.all_at_once);
        assert_eq!(q.makespan_ns, 5000);
        assert_eq!(q.latency_mean_ns, (1000 + 1500 + 1000 + 1900) as f64 / 4.0);
        assert_eq!(q.latency_max_ns, 1900);
        assert_eq!(q.avg_queue_length, 5400.0 / 5000.0);
        assert_eq!(q.utilization, 4000.0 / 5000.0);
        // Scale 2: arrivals 0, 1000, 6000, 6200: latencies 1, 1, 1, 1.8 µs.
        let q = fixed(&times, 4, 2.0);
        assert_eq!(q.makespan_ns, 8000);
        assert_eq!(q.latency_mean_ns, (1000 + 1000 + 1000 + 1800) as f64 / 4.0);
        assert_eq!(q.avg_queue_length, 4800.0 / 8000.0);
        // Scale 0.5: arrivals 0, 250, 1500, 1550: served 0–1, 1–2, 2–3, 3–4.
        let q = fixed(&times, 4, 0.5);
        assert_eq!(q.makespan_ns, 4000);
        assert_eq!(q.latency_mean_ns, (1000 + 1750 + 1500 + 2450) as f64 / 4.0);
        // Scale 0: all at once.
        let q = fixed(&times, 4, 0.0);
        assert_eq!(q.latency_mean_ns, 2500.0);
        // A timestamp going back in time arrives with the one before it.
        let q = fixed(&[0, 5000, 4000], 4, 1.0);
        assert_eq!(q.latency_mean_ns, (1000 + 1000 + 2000) as f64 / 3.0);
    }

    #[test]
    fn iops_and_bandwidth_identities() {
        for (times, scale) in [(&[0u64, 0, 0, 0][..], 1.0), (&[0, 500, 3000, 3100][..], 3.0)] {
            let q = fixed(times, 2, scale);
            let secs = q.makespan_ns as f64 / 1e9;
            assert!((q.iops - q.completed_requests as f64 / secs).abs() < 1e-6 * q.iops);
            let mb = 4.0 * PAGE as f64 / 1e6;
            assert!((q.bandwidth_mb_s - mb / secs).abs() < 1e-9 * q.bandwidth_mb_s);
            assert_eq!(q.bandwidth_mb_s, q.write_bandwidth_mb_s);
        }
        let q = fixed(&[0, 0, 0, 0], 4, 1.0);
        assert_eq!(q.iops, 1e6);
        assert_eq!(q.bandwidth_mb_s, 4096.0);
        // Reads count in bandwidth, not in write bandwidth.
        let reqs = [req(0, Op::Write, 0), req(0, Op::Read, 7)];
        let (q, _) = replay_with("lru", Mode::WriteBack, 8, "dram", &reqs, 4, 1.0);
        assert!((q.bandwidth_mb_s - 2.0 * q.write_bandwidth_mb_s).abs() < 1e-9);
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        // 1000 requests at once, 1 µs each: latencies 1, 2, …, 1000 µs.
        let q = fixed(&[0; 1000], 32, 1.0);
        assert_eq!(q.latency_mean_ns, 500_500.0);
        assert_eq!(q.latency_max_ns, 1_000_000);
        let near = |got: u64, want: u64| (got as f64 - want as f64).abs() <= 0.001 * want as f64;
        assert!(near(q.latency_p50_ns, 500_000), "p50 {}", q.latency_p50_ns);
        assert!(near(q.latency_p99_ns, 990_000), "p99 {}", q.latency_p99_ns);
        // A full NCQ from the start: 32 in it until the last 31 drain.
        assert!(q.avg_queue_length > 31.0 && q.avg_queue_length <= 32.0);
    }

    #[test]
    fn a_full_hit_costs_buffer_time() {
        // Write-back on DRAM: the first write misses (no device I/O), the second hits.
        let reqs = [req(0, Op::Write, 0), req(10_000, Op::Write, 0)];
        let (q, c) = replay_with("lru", Mode::WriteBack, 8, "dram", &reqs, 1, 1.0);
        assert_eq!(c.hits, 1);
        assert_eq!(q.latency_max_ns, 100);
        assert_eq!(q.device_busy_ns, 200);
    }

    /// Paper 002 Fig. 4 through the engine: a 4-page write-only buffer holds
    /// 1 2 4 5 (MRU … LRU); a read keeps the device busy while C1 (write 3)
    /// and C2 (write 5) arrive.
    #[test]
    fn paper_002_fig_4_through_the_queue() {
        let reqs = [
            req(0, Op::Write, 5),
            req(1000, Op::Write, 4),
            req(2000, Op::Write, 2),
            req(3000, Op::Write, 1),
            req(4000, Op::Read, 9),  // miss, not inserted: 100 ns fetch + 100 ns buffer
            req(4050, Op::Write, 3), // C1
            req(4100, Op::Write, 5), // C2
        ];
        let run = |policy: &str, depth: u32| replay_with(policy, Mode::WriteOnly, 4, "dram", &reqs, depth, 1.0);
        // Depth 3: C1 and C2 both wait in the NCQ behind the read.
        let (q, c) = run("qlru", 3);
        assert_eq!(c.write_hits, 1, "C2 hits under QLRU");
        // C1 dispatched at 4200: miss, evicts dirty 4 (100 ns write-back + 100 ns buffer);
        // C2 at 4400: hit, 100 ns.
        assert_eq!(q.makespan_ns, 4500);
        let (q, c) = run("lru", 3);
        assert_eq!(c.write_hits, 0, "LRU evicted 5 for C1");
        assert_eq!(q.makespan_ns, 4600);
        // Depth 2: C2 waits in the host until the read completes at 4200 and
        // enters as C1 is dispatched: still in time.
        let (q, c) = run("qlru", 2);
        assert_eq!(c.write_hits, 1);
        assert_eq!(q.max_host_wait_ns, 100);
        // Depth 1: C2 enters only after C1 was served: no lookahead, as LRU.
        let (_, c) = run("qlru", 1);
        assert_eq!(c.write_hits, 0);
    }

    /// An idle device (huge inter-arrival scale): at most the command in
    /// service is queued, and QLRU only ever sees the command it is about to
    /// serve, so on single-page requests it is LRU.
    #[test]
    fn idle_device_queue_length_at_most_one_and_qlru_is_lru() {
        let spec = "zipf(alpha=0.8,keys=4096,read=30%,unit=bytes,size=4KiB,iat=exp(20us),requests=20k,seed=3)";
        let mut rd = crate::trace::gen::open(spec).unwrap();
        let reqs = crate::trace::read_all(rd.as_mut()).unwrap();
        let dev = "ftl(nand=flashsim)";
        for mode in [Mode::WriteOnly, Mode::WriteBack] {
            let (ql, cl) = replay_with("lru", mode, 512, dev, &reqs, 32, 1e6);
            let (qq, cq) = replay_with("qlru", mode, 512, dev, &reqs, 32, 1e6);
            assert!(ql.avg_queue_length <= 1.0 && qq.avg_queue_length <= 1.0);
            assert_eq!(cl, cq, "{mode}");
            assert_eq!(qq.max_host_wait_ns, 0);
            // Busy (all at once, NCQ full): the lookahead pays off.
            let (_, cl) = replay_with("lru", mode, 512, dev, &reqs, 512, 0.0);
            let (qq, cq) = replay_with("qlru", mode, 512, dev, &reqs, 512, 0.0);
            assert!(qq.avg_queue_length > 500.0);
            assert!(cq.hits > cl.hits, "{mode}: {} vs {}", cq.hits, cl.hits);
        }
    }

    #[test]
    fn bad_settings_are_refused() {
        for (depth, scale) in [(0, 1.0), (513, 1.0), (32, -1.0), (32, f64::NAN), (32, f64::INFINITY)] {
            let e = QueueSpec { depth, iat_scale: scale }.check().unwrap_err().to_string();
            assert!(e.contains("queue depth") || e.contains("scale"), "{e}");
        }
        assert!(QueueSpec { depth: 512, iat_scale: 0.0 }.check().is_ok());
    }

    #[test]
    fn an_empty_trace_reports_zeros() {
        let q = fixed(&[], 8, 1.0);
        assert_eq!((q.completed_requests, q.makespan_ns, q.iops), (0, 0, 0.0));
        assert_eq!((q.latency_p50_ns, q.latency_mean_ns), (0, 0.0));
    }

    #[test]
    fn run_needs_a_device_and_reports_the_queue() {
        use crate::sim::{run, RunSpec, TraceSource};
        let src = TraceSource::Gen("zipf(keys=100,requests=1k,unit=bytes,size=4KiB,iat=10us,read=50%)".into());
        let mut spec = RunSpec {
            policy: "qlru".into(),
            cache_bytes: 64 << 10,
            page_bytes: PAGE,
            mode: Mode::WriteOnly,
            device: None,
            cache_device: None,
            interval: None,
            queue: Some(QueueSpec { depth: 32, iat_scale: 1.0 }),
            align_pages: false,
            sizing: Default::default(),
        };
        let e = run(&src, &spec).unwrap_err().to_string();
        assert!(e.contains("needs a backing device"), "{e}");
        assert!(crate::sim::run::check(&spec).is_err());
        spec.device = Some("ftl(nand=flashsim)".into());
        let r = run(&src, &spec).unwrap();
        let q = r.queue.clone().unwrap();
        assert_eq!(q.completed_requests, 1000);
        assert_eq!(r.counters.requests, 1000);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["queue_depth"], 32);
        assert!(json["avg_queue_length"].is_number() && json["device"].is_string());
        // Without a queue the report has none of its fields.
        spec.queue = None;
        let json = serde_json::to_value(run(&src, &spec).unwrap()).unwrap();
        assert!(json.get("avg_queue_length").is_none());
    }
}
