//! Page keys: the one number a policy knows a page by, with the device in its
//! high bits and the page number in its low ones, and the limits that follow.
//! Traces check their device numbers against [`MAX_DEVICES`]; the simulator
//! turns requests into keys with [`page_key`].

/// Devices per trace: a page key gives the device 20 bits.
pub const MAX_DEVICES: u64 = 1 << 20;
/// Bits of page number in a page key.
pub const PAGE_BITS: u32 = 44;

/// The key a policy sees for page `page` of device `dev`: each device its own
/// address space. `None` if the page number does not fit in [`PAGE_BITS`].
#[inline]
pub fn page_key(dev: u32, page: u64) -> Option<u64> {
    (page < 1 << PAGE_BITS).then_some((dev as u64) << PAGE_BITS | page)
}

/// The device and page number a key stands for.
pub fn split_key(key: u64) -> (u32, u64) {
    ((key >> PAGE_BITS) as u32, key & ((1 << PAGE_BITS) - 1))
}
