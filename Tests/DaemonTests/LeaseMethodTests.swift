// lease.release and lease.list between connections, run in process (MethodTable with one
// context per connection, so no daemon and no second uid are needed): a lease is ended only by
// its own connection or an admin (with enforce_ownership, another uid's lease is to a non-admin
// as no lease); lease.list pages by lease id, ends a page before the reply
// limit (refusing only a lease too big alone), and with enforce_ownership shows a non-admin
// only its own uid's leases.

@testable import AssetDaemon
import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct LeaseMethodTests {
    private let folders = TempFolders(prefix: "assetd-leasemethods-")

    /// A store in a fresh temp folder with one root, and that root.
    private func openStore() throws -> (Store, String) {
        let dir = try folders.make()
        try FileManager.default.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
        let store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [dir + "/root"]))
        return (store, dir + "/root")
    }

    /// The context of connection `connection` of user `uid`.
    private func context(
        _ store: Store, connection: UInt64, uid: UInt32, admin: Bool = false, enforce: Bool = false
    ) -> MethodContext {
        MethodContext(
            store: store, caller: Caller(uid: uid, userName: "u\(uid)", isAdmin: admin), enforceOwnership: enforce,
            connection: connection)
    }

    private func call(_ method: String, _ params: JSONValue, _ ctx: MethodContext) throws -> JSONValue {
        try MethodTable.call(method, params, ctx).get().result
    }

    /// A lease's params for `ctx`'s object `key`, not there yet: what a non-admin may lease
    /// under enforce_ownership without an object holding a file (LeaseOwnershipTests).
    private func own(_ ctx: MethodContext, _ key: String) -> JSONValue {
        ["objects": [["collection": .string(ctx.caller.userName), "key": .string(key)]], "ttl": 60]
    }

    @Test("another connection's release of a lease is denied and the lease lives; an admin's ends it")
    func releaseByOthers() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let a = context(store, connection: 1, uid: 1000)
        let b = context(store, connection: 2, uid: 1001)
        let admin = context(store, connection: 3, uid: 0, admin: true)
        let lease = try call("lease.acquire", ["files": [.string(root + "/a.bin")], "ttl": 60], a)
        let id = try #require(lease["lease"])
        let denied = MethodTable.call("lease.release", ["lease": id], b)
        guard case .failure(let e) = denied else {
            Issue.record("another connection released the lease")
            return
        }
        #expect(e.stableCode == "permission_denied")
        let listed = try call("lease.list", [:], a)["leases"]?.arrayValue ?? []
        #expect(listed.map { $0["lease"] } == [id])
        #expect(store.leases.isLeased(file: root + "/a.bin"))
        #expect(try call("lease.release", ["lease": id], admin)["released"] == true)
        #expect(try call("lease.list", [:], a)["leases"] == [])
        #expect(!store.leases.isLeased(file: root + "/a.bin"))
    }

    @Test("with enforce_ownership a non-admin's release of a lease it cannot list answers as for no lease")
    func releaseHiddenLease() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let a = context(store, connection: 1, uid: 1000, enforce: true)
        let a2 = context(store, connection: 2, uid: 1000, enforce: true)
        let b = context(store, connection: 3, uid: 1001, enforce: true)
        let id = try #require(try call("lease.acquire", own(a, "a"), a)["lease"])
        let inProcess = JSONValue.string(try store.leases.acquire(objects: [], files: [root + "/p"], ttl: 60).id)
        let unknown = try call("lease.release", ["lease": "L999999999"], b)
        #expect(unknown == ["released": false])
        // Another uid's lease and an in-process one: the answer for an unknown id, and they live on.
        #expect(try call("lease.release", ["lease": id], b) == unknown)
        #expect(try call("lease.release", ["lease": inProcess], b) == unknown)
        #expect(store.leases.live(id.stringValue ?? "") != nil && store.leases.isLeased(file: root + "/p"))
        // Its own uid's lease of another connection, which it lists: denied.
        func code(_ r: Result<MethodOutcome, RPCError>) -> String? {
            guard case .failure(let e) = r else { return nil }
            return e.stableCode
        }
        #expect(code(MethodTable.call("lease.release", ["lease": id], a2)) == "permission_denied")
        // Without enforce_ownership every lease is listed to all: denied.
        #expect(
            code(MethodTable.call("lease.release", ["lease": id], context(store, connection: 3, uid: 1001)))
                == "permission_denied")
        #expect(try call("lease.release", ["lease": id], a)["released"] == true)
    }

    /// The ids `ctx` lists, and the page's `next`.
    private func list(_ ctx: MethodContext, _ params: JSONValue = [:]) throws -> ([String], JSONValue?) {
        let r = try call("lease.list", params, ctx)
        return ((r["leases"]?.arrayValue ?? []).compactMap { $0["lease"]?.stringValue }, r["next"])
    }

    @Test("lease.list pages by lease id: limit, next, after; a bad after is invalid params")
    func paging() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let a = context(store, connection: 1, uid: 1000)
        var ids = [String]()
        for i in 0..<5 {
            // Later leases lapse sooner: the order is the order taken, not of expiry.
            let lease = try call("lease.acquire", ["files": [.string(root + "/\(i)")], "ttl": .int(Int64(60 - i))], a)
            ids.append(try #require(lease["lease"]?.stringValue))
        }
        #expect(store.leases.release(ids[2]) != nil)
        let first = try list(a, ["limit": 2])
        #expect(first.0 == [ids[0], ids[1]])
        #expect(first.1 == .string(ids[1]))
        let second = try list(a, ["limit": 2, "after": .string(ids[1])])
        #expect(second.0 == [ids[3], ids[4]])
        let last = try list(a, ["limit": 2, "after": .string(ids[3])])
        #expect(last.0 == [ids[4]])
        #expect(last.1 == .null)
        #expect(try list(a).0 == [ids[0], ids[1], ids[3], ids[4]])
        guard case .failure(let e) = MethodTable.call("lease.list", ["after": "x"], a) else {
            Issue.record("a bad after was accepted")
            return
        }
        #expect(e.code == Code.invalidParams)
    }

    @Test("a lease.list page ends before max_reply_bytes and pages on; one lease past it is refused")
    func replyLimit() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        var a = context(store, connection: 1, uid: 1000)
        let long = String(repeating: "p", count: 200)
        var ids = [String]()
        for i in 0..<10 {
            let l = try call("lease.acquire", ["files": [.string("\(root)/\(long)\(i)")], "ttl": 60], a)
            ids.append(try #require(l["lease"]?.stringValue))
        }
        // About 300 bytes a lease: a few per page, every one of them over the pages.
        a.replyLimit = 1500
        var seen = [String]()
        var pages = 0
        var after: JSONValue = .null
        repeat {
            let (page, next) = try list(a, after == .null ? [:] : ["after": after])
            #expect(!page.isEmpty)
            seen += page
            pages += 1
            after = next ?? .null
        } while after != .null && pages < 20
        #expect(seen == ids)
        #expect(pages >= 3)
        // Each page's reply, as the daemon renders it, fits.
        let first = try call("lease.list", [:], a)
        #expect(RPCLine.result(id: 1, first).count <= 1500)

        // A long request id counts too: each page, rendered with it, still fits.
        var b = a
        b.requestID = RPCID(.string(String(repeating: "i", count: 1000)))
        b.replyLimit = 2000
        let withID = try call("lease.list", [:], b)
        #expect(withID["leases"]?.arrayValue?.isEmpty == false)
        #expect(RPCLine.result(id: try #require(b.requestID), withID).count <= 2000)

        let huge = try call(
            "lease.acquire", ["files": [.string("\(root)/\(String(repeating: "q", count: 2000))")], "ttl": 60], a)
        guard case .failure(let e) = MethodTable.call("lease.list", ["after": .string(ids[9])], a) else {
            Issue.record("a lease past the reply limit alone was answered")
            return
        }
        #expect(e.stableCode == "reply_too_large")
        #expect(huge["lease"] != nil)
    }

    @Test("with enforce_ownership a non-admin lists only its own uid's leases; without, all")
    func ownLeasesOnly() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let a = context(store, connection: 1, uid: 1000, enforce: true)
        let a2 = context(store, connection: 2, uid: 1000, enforce: true)
        let b = context(store, connection: 3, uid: 1001, enforce: true)
        let admin = context(store, connection: 4, uid: 0, admin: true, enforce: true)
        let la = try #require(try call("lease.acquire", own(a, "a"), a)["lease"])
        let lb = try #require(try call("lease.acquire", own(b, "b"), b)["lease"])
        let (ida, idb) = (try #require(la.stringValue), try #require(lb.stringValue))
        #expect(try list(a).0 == [ida])
        #expect(try list(a2).0 == [ida])
        #expect(try list(b).0 == [idb])
        #expect(try list(admin).0 == [ida, idb])
        #expect(try list(context(store, connection: 3, uid: 1001)).0 == [ida, idb])

        // An in-process lease (no holder, no uid) is hidden from a non-admin, shown to an admin.
        let inProcess = try store.leases.acquire(objects: [], files: [root + "/p"], ttl: 60).id
        #expect(try list(a).0 == [ida])
        #expect(try list(admin).0 == [ida, idb, inProcess])

        // Pages of a's leases with other leases between them: limit and next count a's alone.
        var mine = [ida]
        for i in 0..<4 {
            _ = try call("lease.acquire", own(b, "b\(i)"), b)
            let l = try call("lease.acquire", own(a, "a\(i)"), a)
            mine.append(try #require(l["lease"]?.stringValue))
        }
        let first = try list(a, ["limit": 2])
        #expect(first.0 == Array(mine[0..<2]) && first.1 == .string(mine[1]))
        let second = try list(a2, ["limit": 2, "after": .string(mine[1])])
        #expect(second.0 == Array(mine[2..<4]) && second.1 == .string(mine[3]))
        let last = try list(a, ["limit": 2, "after": .string(mine[3])])
        #expect(last.0 == [mine[4]] && last.1 == .null)
    }
}
