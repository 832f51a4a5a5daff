// A queued file's look that ended on a transient error (EMFILE, EIO) is owed: the sweep takes
// it later. Later, another file may be at the path: one written after the delete (another
// user's, or a new version not put yet), or an older one in a folder renamed there. So the
// look taken late takes a file only if nothing on its way changed since it was owed: the file
// and every folder below the root have a ctime before then, by a margin for the coarse clock
// and filesystems that keep whole seconds. The ctime is the wall clock's, so the clock is
// vouched for too: the look was owed in this very process, and the wall clock has not gone
// back against the boot clock since. On any doubt nothing is taken: the file is kept. The
// root must also still be the folder it was (its device and inode): a pin accepts a disk
// mounted on the root or unmounted from it, and a stale file of the same name on the other
// filesystem is not the one the delete meant.

import Glibc

/// The look a queue row owes (`unlink_queue.identify`): when it was owed, and the claim it
/// is judged by.
struct OwedLook: Equatable {
    /// The wall clock (CLOCK_REALTIME), nanoseconds, when it was owed.
    var since: Int64
    /// The wall clock less the boot clock (CLOCK_BOOTTIME) then, nanoseconds.
    var offset: Int64
    /// The process that owed it (`thisProcess`).
    var process: UInt64
    /// The root's folder then (its pin: device and inode); nil when it was never opened.
    var rootDevice: Int64?
    var rootInode: Int64?
    var claim: RowClaim

    /// Owed now, in this process, with the root's folder `root` then.
    init(claim: RowClaim, root: RootPins.Pin?) {
        (since, offset) = Self.clocks()
        process = Self.thisProcess
        rootDevice = root.map { Int64(bitPattern: $0.device) }
        rootInode = root.map { Int64(bitPattern: $0.inode) }
        self.claim = claim
    }

    /// As stored: "since offset process rootDevice rootInode claim" ("-" for an unknown
    /// root), the claim last ("" for none, else its text).
    var text: String {
        let root = rootDevice.flatMap { d in rootInode.map { "\(d) \($0)" } } ?? "- -"
        return "\(since) \(offset) \(process) \(root) \(claim.owedText)"
    }

    init?(text: String) {
        let f = text.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: false)
        guard f.count == 6, let since = Int64(f[0]), let offset = Int64(f[1]), let process = UInt64(f[2]) else {
            return nil
        }
        (self.since, self.offset, self.process) = (since, offset, process)
        (rootDevice, rootInode) = (Int64(f[3]), Int64(f[4]))
        claim = RowClaim(owedText: String(f[5]))
    }

    /// Whether the root's folder `now` is the one it was when the look was owed.
    func isRoot(_ now: FileStatus) -> Bool { rootDevice == now.device && rootInode == now.inode }

    /// The latest ctime (nanoseconds) a file or folder on the way may have to be taken; nil
    /// when the clock cannot be vouched for (owed by another process: another boot, perhaps;
    /// the wall clock gone back since), and then nothing is taken.
    var latestChange: Int64? {
        guard process == Self.thisProcess else { return nil }
        let (_, offsetNow) = Self.clocks()
        guard offsetNow >= offset - Self.clockSlack else { return nil }
        return since - Self.margin
    }

    /// How much older than the look a change must be: the kernel's coarse clock lags the
    /// precise one by up to a tick, and some filesystems keep whole seconds (FAT two).
    static let margin: Int64 = 3_000_000_000
    /// How far the wall clock may go back against the boot clock (a slew) and still be
    /// trusted: well within `margin`.
    static let clockSlack: Int64 = 500_000_000

    /// Drawn once a process (getrandom: no descriptor needed).
    static let thisProcess = UInt64.random(in: 1...UInt64.max)

    /// The wall clock, and the wall clock less the boot clock, in nanoseconds.
    static func clocks() -> (Int64, Int64) {
        var real = timespec()
        clock_gettime(CLOCK_REALTIME, &real)
        let r = Int64(real.tv_sec) * 1_000_000_000 + Int64(real.tv_nsec)
        return (r, r - ClockSteps.bootNanoseconds())
    }

    /// Filesystems whose ctimes this kernel's clock sets, and that set the ctime of a file or
    /// folder renamed: ext2/3/4, XFS, Btrfs, tmpfs, F2FS, bcachefs. Another's (NFS, a FUSE
    /// server's, overlays over either) may come from another clock: nothing taken there.
    /// Read through /proc, as the descriptor is O_PATH: none, nothing taken.
    static func keepsLocalTimes(_ fd: Int32) -> Bool {
        guard let type = fileSystemType(of: "/proc/self/fd/\(fd)") else { return false }
        return [0xEF53, 0x5846_5342, 0x9123_683E, 0x0102_1994, 0xF2F5_2010, 0xCA45_1A4E].contains(type)
    }
}
