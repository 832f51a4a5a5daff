// lease.acquire {objects?, files?, ttl} → {lease, expires, objects, files}: protects in-flight work
// from eviction and expiry (assetd(8), CONTROL PROTOCOL, Methods). The lease belongs to the
// connection: it ends when released, when its ttl passes, or when the connection closes. What a
// connection's leases, and all leases, hold is bounded: a lease past a bound is refused whole.
// With enforce_ownership a non-admin leases only its own objects, and files its objects hold or
// it could unlink (or create) itself: a lease keeps a queued unlink back and an object from
// eviction, and renewed for ever another user's would keep that user's files and push
// min_free's evictions onto other owners.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func leaseAcquire(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        guard let holder = ctx.connection else {
            throw RPCError.invalidParams(
                "a lease lives as long as its connection: lease.acquire needs a running daemon (--socket)")
        }
        guard let ttl = try p.optionalDuration("ttl") else { throw RPCError.invalidParams("ttl is required") }
        var objects = [ObjectRef]()
        if let items = p.value("objects") {
            guard let list = items.arrayValue else {
                throw RPCError.invalidParams("objects must be an array of {collection, key}")
            }
            for item in list { objects.append(try Params(["o": item]).ref("o")) }
        }
        let files = try p.optionalStrings("files") ?? []
        // A request wrong in itself says so before whose its objects and files are.
        try LeaseRegistry.validate(objects: objects, files: files, ttl: ttl)
        var accepted = [(path: String, root: String)]()
        for f in files { accepted.append(try ctx.store.roots.accept(f)) }
        // Its size is known from the request: a lease past a bound is refused before the
        // owner reads and the walk of each file the ownership check would make.
        try ctx.store.leases.checkBounds(
            objects: objects.count, files: files.count, holder: holder, uid: ctx.caller.uid, bounds: ctx.leaseBounds)
        // The files no walk judged are looked at too, admins' included: a lease of a folder
        // (or a symlink) protects nothing, as the unlinks take regular files only.
        for f in try checkLeaseOwnership(objects: objects, files: accepted, ctx) {
            try ctx.store.roots.look(at: f.path, root: f.root)
        }
        let lease = try checkLeaseQuota(objects: objects, files: accepted.map(\.path), ctx) {
            try ctx.store.leases.acquire(
                objects: objects, files: files, ttl: ttl, holder: holder, uid: ctx.caller.uid, bounds: ctx.leaseBounds)
        }
        return MethodOutcome(lease.json)
    }

    /// With enforce_ownership, refuses a non-admin's lease whole if it names an object of
    /// another owner (one not there yet is the caller's to put, as for a write) or a file that
    /// no object of the caller holds and that objects of another owner hold, or that the
    /// caller could not unlink, or create, itself (judged as a put naming it is: a download
    /// being written, a file a player uses). Judged
    /// as the lease is taken: an edge that goes later does not end the lease, but the caller
    /// could have unlinked the file itself (its put or edge.add named it), so it keeps nothing
    /// back that it could not remove.
    ///
    /// Returns the files it judged by no walk: all of them for admins and without
    /// enforce_ownership, those an object of the caller holds for the others.
    static func checkLeaseOwnership(
        objects: [ObjectRef], files accepted: [(path: String, root: String)], _ ctx: MethodContext
    ) throws -> [(path: String, root: String)] {
        guard ctx.enforceOwnership, !ctx.caller.isAdmin else { return accepted }
        let caller = ctx.caller
        let user = caller.userName
        typealias Files = [(path: String, root: String)]
        let (held, unheld): (Files, Files) = try ctx.store.read { tx in
            for o in objects {
                if let owner = try tx.owner(of: o), !OwnerName.same(owner, user) {
                    throw RPCError.application(.permissionDenied, "\(o) belongs to \(owner), not \(user)")
                }
            }
            var (own, left) = (Files(), Files())
            for f in accepted {
                let holders = try tx.holders(file: f.path, owner: user)
                if holders.own {
                    own.append(f)
                    continue
                }
                // A file lease keeps its holders from eviction too: one that only another owner's
                // objects hold would shield them, however freely the caller could unlink it.
                if holders.others {
                    throw RPCError.application(
                        .permissionDenied, "\(f.path) is held by objects of another owner, not of \(user)")
                }
                left.append(f)
            }
            return (own, left)
        }
        // Probed outside the snapshot, on the walk's descriptors, as a put's file is.
        let check = FileReferenceCheck(uid: caller.uid, owner: user) {
            UnlinkAccess.refusal($0, uid: caller.uid, gids: caller.gids)
        }
        for f in unheld {
            do {
                try ctx.store.roots.judge(f.path, root: f.root, for: check)
            } catch let e as StoreError where e.code == .permissionDenied {
                throw RPCError.application(.permissionDenied, "no object of \(user) holds \(f.path): \(e.message)")
            }
        }
        return held
    }
}
