// A uid's share of a group commit, and the batch's budget. Each put reads within an allowance
// of its own, as it would alone, but a uid may have a put queued on each of its connections
// (256): taking them all, one batch held the writer that many times one put's bound, and every
// other user's put waited behind it (docs/DESIGN.md, the group commit's shares). So a uid's
// first put of a run of the batch runs, and its next ones only while its puts so far sent fewer
// than `bytes` (what a put's named files cost follows its line) and were charged less than a
// quarter of an allowance for files read again (but for a put that reads none again: of a new
// object, one holding no file, or one whose files the transaction read again already). And
// since many uids (a subuid range) each had a first put, the batch as a whole stops at
// `batchBytes` and two allowances of reads: past them even a uid's first put waits, but for
// the uid first in turn (BatchTurn), whose first put always runs, so a batch holds about three
// allowances (five with a failing put) and every batch answers a put. The rest wait for the
// next batch; a uid whose oldest put waited goes first in it. A light put (a short line reading
// no held file again) goes past the batch's bytes, within a budget of its own, so a bystander's
// put waits for no heavy uid's turn.

import AssetService
import AssetStore

/// Which uid goes first in the next batch (the committer's, across batches): the uids are
/// taken in turn from it, by uid number, not in the queue's order, where the puts deferred
/// from the batch before come first and a bystander would sit behind an attacker's backlog.
/// A uid is served only if its oldest put ran: one whose light puts ran while its heavy one
/// waited would be skipped turn after turn.
final class BatchTurn {
    /// Nil until a batch has deferred a put: the queue head's uid goes first.
    var next: UInt32?

    init() {}
}

struct BatchShares {
    /// Request bytes a uid's puts may send in one batch before its next put waits: light puts
    /// (a few hundred bytes) from all of a uid's connections fit, as many a commit as before.
    static let bytes = 256 << 10
    /// Request bytes a batch's puts may send before a uid's first put waits too.
    static let batchBytes = 1 << 20
    /// A light put's longest line, and what light puts may send past `batchBytes`: bounded
    /// apart, so they cannot grow a batch without bound.
    static let lightLine = 4 << 10
    static let lightBytes = 256 << 10

    private struct Share {
        var bytes = 0
        var reads = 0
        /// The run of the batch the uid's last put ran in (0: none ran).
        var run = 0
        /// Its oldest put was refused before any of its puts ran.
        var passedOver = false
    }

    private var shares: [UInt32: Share] = [:]
    private var run = 0
    /// A batch of one put has nothing to share (its put runs): no dictionary.
    private let counting: Bool
    /// The uid first in turn: its first put of each run runs whatever the batch spent.
    let first: UInt32
    /// What the batch's puts sent, and were charged for files read again, over all its runs.
    private var spentBytes = 0
    /// What the light puts past `batchBytes` sent.
    private var lightBytes = 0
    private var spentReads = 0
    /// The puts alone after a failed retry: a uid that ran already waits for the next batch.
    private var last = false

    init(count: Int, first: UInt32 = 0) {
        counting = count > 1
        self.first = first
    }

    /// Starts a run of the batch (the plain one, the retry, the puts alone): what the uids
    /// spent in the runs before still counts, so a retry does not do a uid's work twice
    /// over, but each uid's first put of the run goes (within the batch's budget), so no uid
    /// waits for ever. `last`: the puts alone after a failed retry, a third pass: only the
    /// uids that have not run yet, and the first in turn's first put (each batch answers one).
    mutating func nextRun(last: Bool = false) {
        run += 1
        self.last = last
    }

    /// Whether the put `params` of `ctx`'s caller, of `bytes`, runs now; if so its bytes are
    /// counted. Past the uid's share or the batch's budget of reads, a put still runs if it
    /// would read no held file again in `tx` (asked only then; nil, each put alone: it might),
    /// and past the batch's bytes if it is light too (`lightLine`, within `lightBytes`). A uid
    /// whose oldest put is refused is marked passed over.
    /// No closure: one capturing the put's context copied it, about 150 instructions a put.
    mutating func admits(_ params: Params, _ ctx: MethodContext, bytes: Int, in tx: WriteTransaction?) -> Bool {
        guard counting else { return true }
        let uid = ctx.caller.principal  // a subuid range's puts share one user's
        var share = shares[uid] ?? Share()
        let opens = share.run != run
        var light = false
        if !opens || uid != first {
            guard fits(params, ctx, bytes, share, opens: opens, light: &light, in: tx) else {
                // Its oldest put waits (none of its puts ran before it): the uid has not been
                // served, whatever its later, lighter puts do (PutBatch.pass).
                if share.run == 0 && !share.passedOver {
                    share.passedOver = true
                    shares[uid] = share
                }
                return false
            }
        }
        share.run = run
        share.bytes += bytes
        if light { lightBytes += bytes } else { spentBytes += bytes }
        shares[uid] = share
        return true
    }

    /// Whether the put `params`, of `bytes`, fits the batch's budgets and (unless it `opens`
    /// its uid's run) its uid's `share`; `light`: it went past the batch's bytes budget in the
    /// light puts' own.
    private func fits(
        _ params: Params, _ ctx: MethodContext, _ bytes: Int, _ share: Share, opens: Bool, light: inout Bool,
        in tx: WriteTransaction?
    ) -> Bool {
        if last && share.run != 0 { return false }
        var rereads: Bool?
        if spentBytes >= Self.batchBytes {
            // A light put (a short line reading no held file again) still goes, within a
            // budget of its own: a bystander's put waits for no heavy uid's turn.
            guard bytes <= Self.lightLine, lightBytes < Self.lightBytes else { return false }
            rereads = tx.map { Self.rereads(params, ctx, $0) } ?? true
            if rereads! { return false }
            light = true
        } else if spentReads > 0 && spentReads >= Self.budget(ctx.cascadeLimit) {
            rereads = tx.map { Self.rereads(params, ctx, $0) } ?? true
            if rereads! { return false }
        }
        if !opens {
            guard share.bytes < Self.bytes else { return false }
            if share.reads >= Self.reads(ctx.cascadeLimit) {
                if rereads == nil { rereads = tx.map { Self.rereads(params, ctx, $0) } ?? true }
                if rereads! { return false }
            }
        }
        return true
    }

    /// Counts what a put of `ctx`'s caller, which ran (or threw), was charged for files read
    /// again.
    mutating func charge(_ ctx: MethodContext, reads: Int) {
        guard counting, reads > 0 else { return }
        shares[ctx.caller.principal]?.reads += reads
        spentReads += reads
    }

    /// Whether `uid` was served in this batch: its oldest put ran (in any of its runs); one
    /// whose later puts ran while its oldest waited was not.
    func served(_ uid: UInt32) -> Bool {
        guard let share = shares[uid] else { return false }
        return share.run != 0 && !share.passedOver
    }

    /// Whether the put `params` of `ctx`'s caller would read held files again in `tx`
    /// (WriteTransaction.wouldReadHeldFilesAgain); a put with no valid name fails anyway.
    private static func rereads(_ params: Params, _ ctx: MethodContext, _ tx: WriteTransaction) -> Bool {
        guard let ref = try? params.ref() else { return false }
        let checked = ctx.enforceOwnership && !ctx.caller.isAdmin
        return (try? tx.wouldReadHeldFilesAgain(ref, checkedAs: checked ? ctx.caller.uid : nil)) ?? true
    }

    /// A quarter of the allowance of a caller bounded at `bound` (an admin's reads are not
    /// counted, as they are not bounded alone).
    static func reads(_ bound: Int?) -> Int {
        guard let bound else { return .max }
        return max(WriteTransaction.readCalls(bound) / 4, 1)
    }

    /// The batch's reads budget for a caller bounded at `bound`: two allowances (an admin's,
    /// not bounded alone, none).
    static func budget(_ bound: Int?) -> Int {
        guard let bound else { return .max }
        let calls = WriteTransaction.readCalls(bound)
        return calls > Int.max / 2 ? .max : 2 * calls
    }

    /// The order a batch's `count` puts (the uid of each by `uid`) run in, nil for the
    /// queue's (one uid), and the uid first in turn: the uids from `turn`'s (the queue head's
    /// if none), in uid order wrapping round, each uid's puts in the queue's order.
    static func order(count: Int, turn: BatchTurn, uid: (Int) -> UInt32) -> (order: [Int]?, first: UInt32) {
        guard count > 1 else { return (nil, count == 1 ? uid(0) : 0) }
        let head = uid(0)
        let from = turn.next ?? head
        var first = head
        var mixed = false
        for i in 1..<count {
            let u = uid(i)
            guard u != head else { continue }
            mixed = true
            if u &- from < first &- from { first = u }
        }
        guard mixed else { return (nil, head) }
        var keys = (0..<count).map { UInt64(uid($0) &- from) << 32 | UInt64($0) }
        keys.sort()
        return (keys.map { Int($0 & 0xffff_ffff) }, first)
    }
}
