// `assetctl --db`: the same methods on the database directly, with the same engine and the
// same lock. While a daemon holds the database it opens read-only: reads work, writes are
// refused with `busy`.

import AssetStore
import ControlProtocol
import Foundation

/// Runs control methods in-process on a database file.
public final class LocalInvoker {
    /// The store opened.
    public let store: Store
    /// True when another process holds the database (reads only).
    public var isReadOnly: Bool { store.isReadOnly }
    private let context: MethodContext
    /// The `detail` of the `busy` the first open met (`pid`, `holder`): who holds the
    /// database when it was opened read-only.
    private var heldBy: JSONValue = .null
    /// Why `policy.enforce` must not run with this config (a value refused as a slip, or a
    /// min_free past a root's disk).
    private var enforceRefusal: ConfigError?
    /// The `[policy]` value refused as a slip, left out of the policy the store runs.
    private var policyRefusal: ConfigError?
    /// What to say before `policy.enforce` runs (a min_free that may not be met).
    public private(set) var enforceWarnings: [String] = []

    /// Opens `databasePath` with the settings of `configPath` (or the default config file,
    /// or the embedded defaults) for roots and durability. Methods run as an admin of `uid`,
    /// whose owner name is the one the daemon gives a client of that uid.
    /// With `restoring`, a marked copy opens writable (for `restore`); otherwise read-only.
    public init(databasePath: String, configPath: String?, uid: UInt32 = getuid(), restoring: Bool = false) throws {
        // A value refused as a slip is left out of the policy, and only enforce is refused for it.
        let config = try DaemonConfig.load(path: configPath, deferringPolicyRefusals: true)
        // It names the roots this process unlinks in: one another user could write is refused.
        try config.checkConfigFile(uid: uid)
        // Judged as assetd judges them; only the daemon's start creates its default root.
        do {
            try config.prepareRoots(create: false)
        } catch .config(let e) {
            throw e
        } catch {
            throw error  // never without `create`
        }
        // Only enforce runs the configured policy; a backup, verify or restore of a store whose
        // disk has changed since, or whose file has a refused value, must never be refused for it.
        policyRefusal = config.policyRefusal
        enforceRefusal = config.policyRefusal
        var judged = config
        do {
            let before = judged.policyWarnings.count
            try judged.checkMinFree()
            enforceWarnings = Array(judged.policyWarnings.dropFirst(before))
        } catch {
            enforceRefusal = enforceRefusal ?? error
        }
        var sc = config.storeConfiguration()
        let user = OwnerName.of(uid: uid)
        sc.defaultOwner = user
        // Opening unlinks nothing: the file may be a backup copy, or a database whose roots
        // the config read here does not name. An explicit `sweep` still sweeps (not a copy).
        sc.drainOnOpen = false
        sc.opensCopies = true
        sc.writesCopies = restoring
        // A file that is not a database already is refused, never given a fresh schema.
        sc.mustExist = true
        configuredDatabase = config.storePath
        sc.lockHolder = "assetctl"  // another --db that finds it held skips its maintenance run
        // Refused before the open writes anything (Store.restoreRefusal).
        if restoring, let refusal = Store.restoreRefusal(databasePath, configuredSource: config.storePath) {
            throw refusal
        }
        // Another file than the config's database is a copy for unlinking: a cp, sqlite3
        // .backup or an older version's backup carries no mark, and its queue lists files
        // the live database may hold again.
        if !LocalInvoker.sameFile(databasePath, config.storePath) { sc.configuredDatabase = config.storePath }
        let store: Store
        do {
            store = try Store(path: databasePath, configuration: sc)
        } catch let e as StoreError where e.code == .busy {
            guard FileManager.default.fileExists(atPath: databasePath) else { throw e }
            heldBy = e.detail ?? .null
            sc.readOnly = true
            store = try Store(path: databasePath, configuration: sc)
        }
        self.store = store
        context = MethodContext(
            store: store, caller: Caller(uid: uid, userName: user, isAdmin: true),
            enforceOwnership: false)
    }

    /// Why `method` with `params` must not run with this config, if it must not. Besides
    /// enforce, an evict with no owner and an expire with no duration run the configured
    /// quotas or TTLs: with a value refused, they would run the others as if it were not there.
    /// The forms the refusal advises (`evict --owner`, `expire --older-than`) do not.
    public func refusal(_ method: String, _ params: JSONValue) -> ConfigError? {
        func given(_ key: String) -> Bool { params[key].map { $0 != .null } ?? false }
        switch method {
        case "policy.enforce": return enforceRefusal
        case "policy.evict" where !given("owner"): return policyRefusal
        case "policy.expire" where !given("older_than") && !given("idle"): return policyRefusal
        default: return nil
        }
    }

    /// Whether `a` and `b` name one file (device and inode: symlinks and hard links too); a
    /// database not created yet is judged by its folder and name.
    static func sameFile(_ a: String, _ b: String) -> Bool {
        func id(_ p: String) -> [Int64]? {
            var st = stat()
            if stat(p, &st) == 0 { return [Int64(st.st_dev), Int64(st.st_ino)] }
            let url = URL(fileURLWithPath: p)
            guard stat(url.deletingLastPathComponent().path, &st) == 0 else { return nil }
            return [Int64(st.st_dev), Int64(st.st_ino), Int64(url.lastPathComponent.hashValue)]
        }
        guard let x = id(a), let y = id(b) else { return false }
        return x == y
    }

    /// The config's `store.path`.
    private let configuredDatabase: String

    /// Makes the backup copy opened a live database again (`assetctl --db PATH restore`),
    /// refused for a file that is no marked copy or a copy of another database than the
    /// config's unless `force` (Store.restore).
    public func restore(force: Bool) throws(RPCError) -> RestoreOutcome {
        do {
            return try store.restore(configuredSource: configuredDatabase, force: force)
        } catch let e as StoreError {
            throw RPCError(e)
        } catch {
            throw RPCError.application(.internalError, "\(error)")
        }
    }

    /// Told what could not be done after a method succeeded (access times it could not write).
    public var warn: (String) -> Void = { _ in }

    deinit { store.close() }

    /// Closes the store now (the lock released); later calls fail.
    public func close() { store.close() }

    /// Runs one method as the daemon would; those that need a running daemon (`shutdown`,
    /// `watch`: the table says which) are refused, and so are those `refusal` names (with
    /// `invalid_params` and the config error as the message).
    /// `progress` gets the `{phase, done, total}` reports of long methods, on this thread.
    public func call(
        _ method: String, _ params: JSONValue, progress: (@Sendable ([String: JSONValue]) -> Void)? = nil
    ) throws(RPCError) -> JSONValue {
        if MethodTable.methods[method]?.needsDaemon == true {
            throw RPCError.invalidParams("\(method) needs a running daemon (--socket)")
        }
        // Here, not in assetctl alone: every caller of the library would run the policy without
        // the refused value, or run it against a disk min_free cannot be met on.
        if let e = refusal(method, params) { throw RPCError.application(.invalidParams, e.description) }
        var context = self.context
        context.progress = progress
        switch MethodTable.call(method, params, context) {
        case .success(let outcome):
            // Unlinks queued by a write run now, as the daemon would after the commit.
            if outcome.commits.contains(where: { !$0.filesQueued.isEmpty }), !store.isReadOnly, !store.isCopy {
                _ = try? store.sweep()
            }
            // No later flush in a process that exits after one method: written now, and those
            // that cannot be (a full disk) are said to be lost rather than dropped at close.
            if let why = store.writePendingAccesses() { warn("access times not written: \(why)") }
            return outcome.result
        case .failure(let e):
            if e.stableCode == "busy", store.isReadOnly { throw heldRefusal() }
            throw e
        }
    }

    /// A write refused because another process holds the database. Another `assetctl --db`
    /// is an overlapping maintenance run (`held`: assetctl skips with exit 0, as cron's runs
    /// on the socket do); a running assetd holds it for as long as it runs, so a skip would
    /// tell a cron line that a run no later one catches up succeeded: it fails, saying to use
    /// the socket (assetctl(1), Maintenance and cron). So does a holder not known.
    private func heldRefusal() -> RPCError {
        let pid = heldBy["pid"]?.intValue.map { " (pid \($0))" } ?? ""
        switch heldBy["holder"]?.stringValue {
        case "assetctl":
            return RPCError.application(
                .busy, "another assetctl --db\(pid) holds this database: only reads are allowed with --db",
                detail: .object(["held": true]))
        case let holder:
            let who = holder == "assetd" ? "a running assetd" : "another process"
            return RPCError.application(
                .busy,
                "\(who)\(pid) holds this database: only reads are allowed with --db;"
                    + " run the command through the daemon's socket (without --db)")
        }
    }
}
