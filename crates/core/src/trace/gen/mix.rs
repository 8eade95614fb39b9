//! `mix(A,B,…,weights=…)`: each request comes from one component, drawn by weight.

use super::values::{pick, Rng, Values};
use super::Component;
use crate::spec::{Spec, SpecError};
use crate::trace::{Request, Unit};

pub(super) struct Mix {
    parts: Vec<Component>,
    /// Cumulative weights, last = 1.
    cum: Vec<f64>,
}

impl Mix {
    pub fn build(p: &Spec, parts: Vec<Component>) -> Result<Mix, SpecError> {
        if parts.is_empty() {
            return Err(p.invalid("weights", "mix needs at least one component, e.g. mix(zipf,scan)"));
        }
        let unit = parts[0].unit();
        if parts.iter().any(|c| c.unit() != unit) {
            return Err(p.invalid(
                "weights",
                "the components mix key traces (unit=keys) and byte traces (unit=bytes); give them all the same unit",
            ));
        }
        let cum = p.weights("weights", parts.len())?;
        Ok(Mix { parts, cum })
    }

    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> Request {
        let i = if self.parts.len() == 1 { 0 } else { pick(&self.cum, rng) };
        self.parts[i].next(rng)
    }

    pub fn unit(&self) -> Unit {
        self.parts[0].unit()
    }
}
