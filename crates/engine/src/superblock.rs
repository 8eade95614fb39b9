//! The superblock: the fixed header of a cache file, kept in two copies.

use std::io;

use crate::device::BlockDevice;
use crate::meta::{copy_len, slot_len, Geometry, MetaStore};
use crate::mode::CacheMode;
use crate::settings::{CacheSettings, MAX_SETTINGS_BYTES};

/// First bytes of a cache file.
pub const SUPER_MAGIC: [u8; 8] = *b"SSDCACHE";
/// Superblock layout version (2: two superblock copies, mirrored metadata).
pub const SUPER_FORMAT: u16 = 2;
/// Bytes of a superblock copy.
pub const SUPER_LEN: u64 = 4096;
/// Where the metadata primaries start in a cache file (after the superblock).
pub const META_OFFSET: u64 = SUPER_LEN;
/// Bytes of the superblock covered by its checksum.
const SUPER_CRC_AT: usize = 80;
/// Where a copy keeps the settings `ssdcache set` made, if any: magic (8),
/// length u32, CRC-32C of the text u32, then the text (JSON, at most
/// [`MAX_SETTINGS_BYTES`]). A cache without settings has zeroes there, as
/// before settings existed, so older builds still open it.
const SETTINGS_AT: usize = 1024;
const SETTINGS_MAGIC: [u8; 8] = *b"SETTINGS";
const SETTINGS_TEXT_AT: usize = SETTINGS_AT + 16;

/// The settings a superblock copy keeps, as their text (inline, so that a
/// superblock stays a plain value).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StoredSettings {
    len: u16,
    text: [u8; MAX_SETTINGS_BYTES],
}

impl Default for StoredSettings {
    fn default() -> Self {
        StoredSettings { len: 0, text: [0; MAX_SETTINGS_BYTES] }
    }
}

impl std::fmt::Debug for StoredSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.bytes()))
    }
}

impl StoredSettings {
    /// `s` as kept; an error if its text does not fit.
    pub fn new(s: &CacheSettings) -> Result<StoredSettings, String> {
        let b = s.to_bytes()?;
        let mut out = StoredSettings { len: b.len() as u16, ..Default::default() };
        out.text[..b.len()].copy_from_slice(&b);
        Ok(out)
    }

    fn bytes(&self) -> &[u8] {
        &self.text[..self.len as usize]
    }

    /// The settings kept (checked when the copy was read).
    pub fn get(&self) -> CacheSettings {
        CacheSettings::from_bytes(self.bytes()).unwrap_or_default()
    }
}

/// The fixed header of a cache file, kept twice: at the start of the file
/// and in its last 4 KiB (where a tool that clobbers the first megabytes of
/// a device does not reach; found there by the file's length when the first
/// copy is gone). Layout (little-endian): magic (8), format u16, cache mode
/// u16 ([`CacheMode`]), segment size u32, SSD segments u32, reserved u32,
/// HDD segments u64, then the offsets of the metadata primaries, the data,
/// the metadata mirrors and the second superblock copy, the file's size at
/// `create`, and BACKING's identity (u64 each), CRC-32C of bytes 0..80
/// (u32); zero to 1024; the settings `ssdcache set` made, if any, at 1024
/// (`SETTINGS_AT`), with their own checksum; zero to 4096.
///
/// The file: superblock | metadata primaries | SSD slots | … | metadata
/// mirrors | superblock copy. The mirrors sit far from the primaries so one
/// clobbered range does not take both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// The cache's shape.
    pub geometry: Geometry,
    /// How the cache treats writes; fixed at `create` because recovery
    /// depends on it (a write-through cache never holds dirty data).
    pub mode: CacheMode,
    /// Offset of the metadata primaries (both slots).
    pub meta_offset: u64,
    /// Offset of SSD slot 0.
    pub data_offset: u64,
    /// Offset of the metadata mirrors.
    pub mirror_offset: u64,
    /// Offset of the second superblock copy.
    pub backup_offset: u64,
    /// The cache file's size when it was created.
    pub device_len: u64,
    /// Which BACKING the cache was created for ([`backing_identity`]): a
    /// cache opened over another disk of the same size would write its dirty
    /// segments, and serve its cached ones, as if they belonged there.
    pub backing_id: u64,
    /// What `ssdcache set` changed ([`crate::settings`]).
    pub settings: StoredSettings,
}

/// A BACKING's identity: its inode for a regular file, its device number
/// for a block device (a renumbered disk is a different disk to us).
pub fn backing_identity(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.ino()
    }
}

/// A byte range of the cache file: `(offset, len)`.
pub type Range = (u64, u64);

/// What reading a cache file's superblock found.
#[derive(Debug)]
pub struct SuperRead {
    /// The superblock in use.
    pub sb: Superblock,
    /// The copy that is damaged, if one is (`serve` rewrites it).
    pub damaged: Option<(u64, String)>,
}

impl Superblock {
    /// The largest cache that fits a `cache_len`-byte file for a
    /// `backing_len`-byte backing store in `segment`-byte segments.
    pub fn plan(cache_len: u64, backing_len: u64, segment: u32, mode: CacheMode) -> Result<Superblock, String> {
        let seg = segment as u64;
        if segment == 0 || !seg.is_multiple_of(4096) {
            return Err(format!("segment size {segment} must be a positive multiple of 4096"));
        }
        if backing_len == 0 || !backing_len.is_multiple_of(seg) {
            return Err(format!(
                "the backing store's size {backing_len} is not a positive multiple of the segment size {segment}"
            ));
        }
        let hdd = backing_len / seg;
        let tail = cache_len / SUPER_LEN * SUPER_LEN;
        let layout = |s: u32| {
            let g = Geometry { segment_size: segment, ssd_segments: s, hdd_segments: hdd };
            let backup_offset = tail.saturating_sub(SUPER_LEN);
            Superblock {
                geometry: g,
                mode,
                meta_offset: META_OFFSET,
                data_offset: META_OFFSET.saturating_add(copy_len(&g)),
                mirror_offset: backup_offset.saturating_sub(copy_len(&g)),
                backup_offset,
                device_len: cache_len,
                backing_id: 0,
                settings: StoredSettings::default(),
            }
        };
        let mut s = (cache_len.saturating_sub(META_OFFSET) / seg).min(u32::MAX as u64) as u32;
        while s > 0 && layout(s).check().is_err() {
            s -= 1;
        }
        if s == 0 {
            return Err(format!(
                "a {cache_len}-byte cache file holds no {segment}-byte segment beside its two superblock \
                 copies and two metadata copies ({} bytes)",
                2 * SUPER_LEN + 2 * copy_len(&layout(1).geometry)
            ));
        }
        Ok(layout(s))
    }

    /// End of the SSD slots.
    pub fn data_end(&self) -> u64 {
        let g = &self.geometry;
        self.data_offset.saturating_add((g.ssd_segments as u64).saturating_mul(g.segment_size as u64))
    }

    /// Bytes of the cache file used.
    pub fn end(&self) -> u64 {
        self.backup_offset.saturating_add(SUPER_LEN)
    }

    /// Every size and offset is consistent and in order (checked with
    /// overflow-safe arithmetic: the numbers may come from a damaged file).
    fn check(&self) -> Result<(), String> {
        let g = &self.geometry;
        let seg = g.segment_size as u64;
        let bad = |what: &str| Err(format!("inconsistent superblock ({what}): {self:?}"));
        if seg < 4096 || !seg.is_multiple_of(4096) || g.ssd_segments == 0 || g.hdd_segments == 0 {
            return bad("segment size or counts");
        }
        if g.hdd_segments.checked_mul(seg).is_none() || copy_len(g) >= u64::MAX / 4 {
            return bad("backing size overflows");
        }
        let ordered = self.meta_offset == META_OFFSET
            && self.data_offset == META_OFFSET + copy_len(g)
            && self.data_end() <= self.mirror_offset
            && self.mirror_offset.checked_add(copy_len(g)) == Some(self.backup_offset)
            && self.end() <= self.device_len;
        if !ordered {
            return bad("regions overlap or run past the file");
        }
        Ok(())
    }

    /// The 4096-byte encoding.
    pub fn encode(&self) -> Vec<u8> {
        let g = &self.geometry;
        let mut b = vec![0u8; SUPER_LEN as usize];
        b[0..8].copy_from_slice(&SUPER_MAGIC);
        b[8..10].copy_from_slice(&SUPER_FORMAT.to_le_bytes());
        b[10..12].copy_from_slice(&(self.mode as u16).to_le_bytes());
        b[12..16].copy_from_slice(&g.segment_size.to_le_bytes());
        b[16..20].copy_from_slice(&g.ssd_segments.to_le_bytes());
        b[24..32].copy_from_slice(&g.hdd_segments.to_le_bytes());
        let fields = [
            self.meta_offset,
            self.data_offset,
            self.mirror_offset,
            self.backup_offset,
            self.device_len,
            self.backing_id,
        ];
        for (i, v) in fields.iter().enumerate() {
            b[32 + 8 * i..40 + 8 * i].copy_from_slice(&v.to_le_bytes());
        }
        let crc = crc32c::crc32c(&b[..SUPER_CRC_AT]);
        b[SUPER_CRC_AT..SUPER_CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        let text = self.settings.bytes();
        if !text.is_empty() {
            b[SETTINGS_AT..SETTINGS_AT + 8].copy_from_slice(&SETTINGS_MAGIC);
            b[SETTINGS_AT + 8..SETTINGS_AT + 12].copy_from_slice(&(text.len() as u32).to_le_bytes());
            b[SETTINGS_AT + 12..SETTINGS_AT + 16].copy_from_slice(&crc32c::crc32c(text).to_le_bytes());
            b[SETTINGS_TEXT_AT..SETTINGS_TEXT_AT + text.len()].copy_from_slice(text);
        }
        b
    }

    /// The settings area of a copy: empty (all zeroes), or magic, length,
    /// checksum and text that parses.
    fn decode_settings(b: &[u8]) -> Result<StoredSettings, String> {
        let area = &b[SETTINGS_AT..];
        if area.iter().all(|&x| x == 0) {
            return Ok(StoredSettings::default());
        }
        if area[..8] != SETTINGS_MAGIC {
            return Err("non-zero bytes after the superblock's checksummed header".into());
        }
        let len = u32::from_le_bytes(area[8..12].try_into().unwrap()) as usize;
        if len == 0 || len > MAX_SETTINGS_BYTES {
            return Err(format!("settings of {len} bytes (at most {MAX_SETTINGS_BYTES})"));
        }
        let text = &area[16..16 + len];
        if crc32c::crc32c(text) != u32::from_le_bytes(area[12..16].try_into().unwrap()) {
            return Err("settings checksum mismatch".into());
        }
        if area[16 + len..].iter().any(|&x| x != 0) {
            return Err("non-zero bytes after the superblock's settings".into());
        }
        CacheSettings::from_bytes(text)?;
        let mut out = StoredSettings { len: len as u16, ..Default::default() };
        out.text[..len].copy_from_slice(text);
        Ok(out)
    }

    /// Parses a superblock copy; `None` if `b` does not start with the magic.
    pub fn decode(b: &[u8]) -> Option<Result<Superblock, String>> {
        if b.len() < SUPER_CRC_AT + 4 || b[0..8] != SUPER_MAGIC {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let format = u16::from_le_bytes([b[8], b[9]]);
        let mode = u16::from_le_bytes([b[10], b[11]]);
        Some(if format != SUPER_FORMAT {
            Err(format!(
                "superblock format {format}, this build reads {SUPER_FORMAT} (a cache made by another ssdcache \
                 version: drain it with that version)"
            ))
        } else if crc32c::crc32c(&b[..SUPER_CRC_AT]) != u32_at(SUPER_CRC_AT) {
            Err("superblock checksum mismatch".into())
        } else if b.len() < SUPER_LEN as usize || b[SUPER_CRC_AT + 4..SETTINGS_AT].iter().any(|&x| x != 0) {
            // Not covered by the checksum, but written as zeroes: damage here
            // is still damage to this copy (and `serve` rewrites it).
            Err("non-zero bytes after the superblock's checksummed header".into())
        } else if let Err(e) = Superblock::decode_settings(b) {
            Err(e)
        } else if let Some(mode) = CacheMode::from_u16(mode) {
            let g = Geometry { segment_size: u32_at(12), ssd_segments: u32_at(16), hdd_segments: u64_at(24) };
            let sb = Superblock {
                geometry: g,
                mode,
                meta_offset: u64_at(32),
                data_offset: u64_at(40),
                mirror_offset: u64_at(48),
                backup_offset: u64_at(56),
                device_len: u64_at(64),
                backing_id: u64_at(72),
                settings: Superblock::decode_settings(b).expect("checked above"),
            };
            sb.check().map(|()| sb)
        } else {
            Err(format!("unknown cache mode {mode} in the superblock"))
        })
    }

    /// Reads one copy at `at`: `None` if no superblock is there.
    fn read_copy(dev: &dyn BlockDevice, at: u64) -> Option<Result<Superblock, String>> {
        let mut b = vec![0u8; SUPER_LEN as usize];
        match dev.read_at(&mut b, at) {
            Ok(()) => Superblock::decode(&b),
            Err(e) => Some(Err(format!("unreadable: {e}"))),
        }
    }

    /// Reads the superblock of a cache file from either copy: the first if
    /// it is valid, else the one in the file's last 4 KiB.
    pub fn read_either(dev: &dyn BlockDevice) -> io::Result<SuperRead> {
        let bad = |m: String| io::Error::new(io::ErrorKind::InvalidData, m);
        let len = dev.len();
        let first = if len >= SUPER_LEN { Superblock::read_copy(dev, 0) } else { None };
        let (sb, damaged) = match first {
            Some(Ok(sb)) => {
                let backup = match Superblock::read_copy(dev, sb.backup_offset) {
                    Some(Ok(b)) if b == sb => None,
                    Some(Ok(_)) => Some("differs from the first copy".to_string()),
                    Some(Err(e)) => Some(e),
                    None => Some("missing".to_string()),
                };
                (sb, backup.map(|e| (sb.backup_offset, e)))
            }
            first => {
                let what = match first {
                    Some(Err(e)) => e,
                    _ => "missing (no magic)".to_string(),
                };
                let tail = (len / SUPER_LEN * SUPER_LEN).checked_sub(SUPER_LEN);
                match tail.and_then(|at| Superblock::read_copy(dev, at).map(|r| (at, r))) {
                    Some((at, Ok(sb))) if sb.backup_offset == at => (sb, Some((0, what))),
                    other => {
                        let second = match other {
                            Some((_, Err(e))) => e,
                            Some((_, Ok(_))) => "a copy for another file size".to_string(),
                            None => "missing".to_string(),
                        };
                        if holds_cache_metadata(dev) || first_is_ours(dev) {
                            return Err(bad(format!(
                                "both superblock copies are damaged (first: {what}; last 4 KiB: {second}), but \
                                 the file holds ssdcache metadata: do NOT run `ssdcache create` on it (that \
                                 discards any writes the cache holds); restore the file's original size if it \
                                 changed, or keep it for recovery"
                            )));
                        }
                        return Err(bad("not an ssdcache cache file (no superblock in its first or last 4 KiB; \
                             make one with `ssdcache create`)"
                            .to_string()));
                    }
                }
            }
        };
        if sb.end() > len {
            return Err(bad(format!(
                "the cache file has {len} bytes, its superblock needs {} (was it truncated?)",
                sb.end()
            )));
        }
        Ok(SuperRead { sb, damaged })
    }

    /// Reads the superblock, from either copy.
    pub fn read(dev: &dyn BlockDevice) -> io::Result<Superblock> {
        Superblock::read_either(dev).map(|r| r.sb)
    }

    /// The metadata of a cache file.
    pub fn store<D: BlockDevice>(&self, dev: D) -> io::Result<MetaStore<D>> {
        MetaStore::with_mirror(dev, self.meta_offset, self.mirror_offset, self.geometry)
    }

    /// The byte ranges `(offset, len)` of both superblock copies and of the
    /// four metadata copies (slot 0 primary, mirror, slot 1 primary, mirror).
    pub fn regions(&self) -> (Vec<Range>, Vec<Range>) {
        let l = slot_len(&self.geometry);
        let meta = [0, 1]
            .into_iter()
            .flat_map(|slot| [self.meta_offset, self.mirror_offset].map(|at| (at + slot * l, l)))
            .collect();
        (vec![(0, SUPER_LEN), (self.backup_offset, SUPER_LEN)], meta)
    }
}

/// Whether the first bytes look like a (damaged) superblock of ours.
fn first_is_ours(dev: &dyn BlockDevice) -> bool {
    let mut b = [0u8; 8];
    dev.read_at(&mut b, 0).is_ok() && (b == SUPER_MAGIC || b[..6] == SUPER_MAGIC[..6])
}

/// Whether a metadata slot header sits where the first primary lives.
fn holds_cache_metadata(dev: &dyn BlockDevice) -> bool {
    let mut b = [0u8; 8];
    dev.read_at(&mut b, META_OFFSET).is_ok() && b == crate::meta::MAGIC
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn superblock_plan_round_trip_and_bounds() {
        let sb = Superblock::plan(64 << 20, 256 << 20, 1 << 20, CacheMode::WriteThrough).unwrap();
        assert_eq!(sb.geometry.hdd_segments, 256);
        assert_eq!(sb.geometry.ssd_segments, 63, "one segment's worth goes to the superblocks and metadata");
        assert_eq!(sb.end(), 64 << 20, "the second superblock copy is the file's last 4 KiB");
        assert!(sb.data_end() <= sb.mirror_offset);
        assert_eq!(Superblock::decode(&sb.encode()), Some(Ok(sb)));
        assert_eq!(Superblock::decode(&sb.encode()).unwrap().unwrap().mode, CacheMode::WriteThrough);
        let with_crc = |mut b: Vec<u8>| {
            let crc = crc32c::crc32c(&b[..SUPER_CRC_AT]);
            b[SUPER_CRC_AT..SUPER_CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
            b
        };
        let mut odd = sb.encode();
        odd[10] = 9;
        assert!(matches!(Superblock::decode(&with_crc(odd)), Some(Err(e)) if e.contains("unknown cache mode 9")));
        let mut bad = sb.encode();
        bad[20] ^= 1;
        assert!(matches!(Superblock::decode(&bad), Some(Err(_))));
        assert_eq!(Superblock::decode(&[0; 4096]), None);
        // Crafted sizes with a valid checksum are refused, never allocated.
        for (at, v) in [(16usize, u32::MAX as u64), (24, u64::MAX / 2), (24, u64::MAX), (56, 1u64 << 62)] {
            let mut b = sb.encode();
            if at == 16 {
                b[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
            } else {
                b[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            assert!(matches!(Superblock::decode(&with_crc(b)), Some(Err(e)) if e.contains("inconsistent")));
        }
        let mut old = sb.encode();
        old[8] = 1;
        assert!(matches!(Superblock::decode(&old), Some(Err(e)) if e.contains("format 1")));
        assert!(Superblock::plan(64 << 20, (256 << 20) + 1, 1 << 20, CacheMode::WriteBack).is_err());
        assert!(Superblock::plan(1 << 20, 256 << 20, 1 << 20, CacheMode::WriteBack).is_err());
    }

    #[test]
    fn settings_are_kept_checked_and_absent_settings_encode_as_before() {
        let sb = Superblock::plan(64 << 20, 128 << 20, 1 << 20, CacheMode::WriteBack).unwrap();
        let plain = sb.encode();
        assert!(plain[SETTINGS_AT..].iter().all(|&b| b == 0), "no settings: the layout older builds read");
        let mut set = CacheSettings::default();
        set.assign("policy=s3fifo").unwrap();
        set.assign("max-dirty=20%").unwrap();
        let with = Superblock { settings: StoredSettings::new(&set).unwrap(), ..sb };
        let b = with.encode();
        let back = Superblock::decode(&b).unwrap().unwrap();
        assert_eq!(back, with);
        assert_eq!(back.settings.get(), set);
        // A flipped bit in the text, its length or after it: this copy is damaged.
        for at in [SETTINGS_TEXT_AT + 3, SETTINGS_AT + 9, SETTINGS_TEXT_AT + 900] {
            let mut bad = b.clone();
            bad[at] ^= 0x10;
            assert!(Superblock::decode(&bad).unwrap().is_err(), "flip at {at}");
        }
    }
}
