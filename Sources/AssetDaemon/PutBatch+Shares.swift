// A uid's share of a group commit. Each put reads within an allowance of its own, as it would
// alone, but a uid may have a put queued on each of its connections (256): taking them all,
// one batch held the writer that many times one put's bound, and every other user's put
// waited behind it (docs/DESIGN.md, the group commit's shares). So a uid's first put of a run
// of the batch always runs, and its next ones only while its puts so far sent fewer than
// `bytes` (what a put's named files cost follows its line) and were charged less than a
// quarter of an allowance for files read again (but for a put that reads none again: of a
// new object, one holding no file, or one whose files the transaction read again already);
// the rest wait for the next batch, ahead of the puts that came later.

import AssetService
import AssetStore

struct BatchShares {
    /// Request bytes a uid's puts may send in one batch before its next put waits: light puts
    /// (a few hundred bytes) from all of a uid's connections fit, as many a commit as before.
    static let bytes = 256 << 10

    private struct Share {
        var bytes = 0
        var reads = 0
        /// The run of the batch the uid's last put ran in.
        var run = 0
    }

    private var shares: [UInt32: Share] = [:]
    private var run = 0
    /// A batch of one put has nothing to share (its put runs): no dictionary.
    private let counting: Bool

    init(count: Int) { counting = count > 1 }

    /// Starts a run of the batch (the plain one, the retry, the puts alone): what the uids
    /// spent in the runs before still counts, so a retry does not do a uid's work twice
    /// over, but each uid's first put of the run goes, so no uid waits for ever.
    mutating func nextRun() { run += 1 }

    /// Whether the put `params` of `ctx`'s caller, of `bytes`, runs now; if so its bytes are
    /// counted. Past the uid's share of reads, a put still runs if it would read no held file
    /// again in `tx` (asked only then; nil, each put alone: it might). No closure: one
    /// capturing the put's context copied it, about 150 instructions a put.
    mutating func admits(_ params: Params, _ ctx: MethodContext, bytes: Int, in tx: WriteTransaction?) -> Bool {
        guard counting else { return true }
        let principal = ctx.caller.principal
        var share = shares[principal] ?? Share()
        if share.run == run {
            guard share.bytes < Self.bytes else { return false }
            if share.reads >= Self.reads(ctx.cascadeLimit) {
                guard let tx, !Self.rereads(params, ctx, tx) else { return false }
            }
        }
        share.run = run
        share.bytes += bytes
        shares[principal] = share
        return true
    }

    /// Counts what a put of `ctx`'s caller, which ran, was charged for files read again.
    mutating func charge(_ ctx: MethodContext, reads: Int) {
        guard counting, reads > 0 else { return }
        shares[ctx.caller.principal]?.reads += reads
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
}
