//! 2q (placeholder: being written).

use crate::policy::registry::{BuildCtx, PolicyInfo};
use crate::policy::{Policy, Spec, SpecError};

fn build(spec: &Spec, _ctx: &BuildCtx) -> Result<Box<dyn Policy>, SpecError> {
    Err(SpecError::Syntax { spec: spec.canonical(), why: "not implemented yet".into() })
}

pub const INFO: PolicyInfo = PolicyInfo { name: "2q", about: "", params: &[], build };
