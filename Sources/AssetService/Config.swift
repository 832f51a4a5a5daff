// The daemon's settings (assetd.toml(5), SETTINGS): every key of the config file, the embedded
// defaults used when there is no config file, and the effective settings printed at start-up.

import AssetStore
import Foundation

/// Effective settings of assetd (and of assetctl --db).
public struct DaemonConfig: Sendable {
    /// The file they came from; nil for the embedded defaults.
    public var sourcePath: String?
    /// `store.path`.
    public var storePath: String
    /// `store.durability`.
    public var durability: StoreConfiguration.Durability = .full
    /// `store.reserve`: bytes of the ballast kept for deletes on a full disk (0: none).
    public var reserve = StoreConfiguration.defaultReserve
    /// `store.coalesce_wal`: the writer combines each commit's WAL writes.
    public var coalesceWAL = true
    /// `store.access_flush`: the longest a touch's access time stays in memory only (seconds).
    public var accessFlush = 1.0
    /// `control.socket`.
    public var socketPath: String
    /// `control.mode`.
    public var socketMode: UInt32 = 0o660
    /// `control.admin_uids`.
    public var adminUIDs: [UInt32] = []
    /// `control.admin_groups`: group names or numeric gids.
    public var adminGroups: [AdminGroup] = []
    /// `control.enforce_ownership`.
    public var enforceOwnership = false
    /// `control.subuid_file`: subordinate uid ranges, the uids of each counted as one user
    /// for the per-uid bounds ("": none).
    public var subuidFile = "/etc/subuid"
    /// `control.max_request_bytes`.
    public var maxRequestBytes = 1_048_576
    /// `control.max_connections`.
    public var maxConnections = 1024
    /// The other `control.*` limits.
    public var limits = ControlLimits()
    /// `files.roots`.
    public var roots: [String]
    /// `assetd --adopt-root`: roots bound to this database at this start whatever their
    /// marker says (assetd(8), ROOTS).
    public var adoptRoots: [String] = []
    /// Whether `roots` is the embedded default (created at start) or set by the config file.
    public var rootsOrigin = RootsOrigin.embeddedDefault
    /// `files.unlink_delay`, seconds.
    public var unlinkDelay = 0.0
    /// `files.orphan_grace`, seconds.
    public var orphanGrace = 3600.0
    /// `files.skip_open`.
    public var skipOpenFiles = false
    /// `[policy]`; nil: nothing is evicted or expired.
    public var policy: PolicyConfiguration?
    /// Legal but dangerous `[policy]` values, one line each, for the log and --check-config.
    public var policyWarnings: [String] = []
    /// The first `[policy]` value refused (a budget, quota or TTL of 0), left out of `policy`,
    /// when read with `deferringPolicyRefusals`; otherwise such a value is thrown.
    public var policyRefusal: ConfigError?
    /// The line of `policy.min_free`, for errors found once the roots' file systems are known.
    var minFreeLine: Int?
    /// `log.level`.
    public var logLevel: LogLevel = .info
    /// `[[collections]]`.
    public var templates: [UTF8Key: [EdgeTemplate]] = [:]
    /// `[[indexes]]`.
    public var indexes: [IndexDefinition] = []

    /// The embedded defaults for this user and environment (assetd(8), CONFIGURATION).
    public static func embeddedDefaults(
        uid: UInt32 = getuid(), environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> DaemonConfig {
        if uid == 0 {
            return DaemonConfig(
                storePath: "/var/lib/assetd/assetd.sqlite", socketPath: "/run/assetd/control.sock",
                roots: ["/var/cache/assetd"])
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        let state =
            (environment["XDG_STATE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.local/state") + "/assetd"
        let runtime = environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.cache"
        // A folder of assetd's own: everything under a root that no object holds is an
        // orphan, and the cache folder itself holds every other program's cache.
        return DaemonConfig(
            storePath: state + "/assetd.sqlite",
            socketPath: runtime.map { $0 + "/assetd.sock" } ?? state + "/control.sock",
            roots: [cache + "/assetd"])
    }

    /// The config file to read when none is named: /etc/assetd/assetd.toml as root, else
    /// $XDG_CONFIG_HOME/assetd/assetd.toml; nil if it does not exist.
    public static func defaultFile(
        uid: UInt32 = getuid(), environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String? {
        let path: String
        if uid == 0 {
            path = "/etc/assetd/assetd.toml"
        } else {
            let home = environment["HOME"] ?? NSHomeDirectory()
            path =
                (environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.config")
                + "/assetd/assetd.toml"
        }
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// Reads `path`, or the default file, or returns the embedded defaults. With
    /// `deferringPolicyRefusals`, a refused `[policy]` value is left out and kept in
    /// `policyRefusal` rather than thrown (`assetctl --db`: only enforce must refuse it).
    public static func load(path: String?, deferringPolicyRefusals: Bool = false) throws(ConfigError) -> DaemonConfig {
        guard let file = path ?? defaultFile() else { return embeddedDefaults() }
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            // Foundation's description ("The operation could not be completed. …") says less
            // than the system's own reason, when there is one.
            let fd = open(file, O_RDONLY)
            var why = fd < 0 ? String(cString: strerror(errno)) : "not UTF-8 text"
            var info = stat()
            if fd >= 0, fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { why = "it is a folder" }
            if fd >= 0 { close(fd) }
            throw ConfigError(file: file, line: nil, key: nil, message: "cannot read: \(why)")
        }
        return try ConfigParser(file: file, text: text, deferPolicyRefusals: deferringPolicyRefusals).parse(
            defaults: embeddedDefaults())
    }

    /// The engine settings these imply.
    public func storeConfiguration() -> StoreConfiguration {
        var c = StoreConfiguration(roots: roots)
        c.durability = durability
        c.reserve = reserve
        c.coalesceWAL = coalesceWAL
        c.unlinkDelay = unlinkDelay
        c.indexes = indexes
        c.templates = templates
        c.orphanGrace = orphanGrace
        c.skipOpenFiles = skipOpenFiles
        c.policy = policy
        c.enforceOwnership = enforceOwnership
        c.queryTimeLimit = limits.queryTimeLimit
        // No value a query builds can be sent, once over the reply limit: SQLite stops it early.
        c.queryLengthLimit = limits.maxReplyBytes
        c.queryTempLimit = limits.queryTempBytes
        c.bindRoots = true
        c.adoptRoots = adoptRoots
        return c
    }

    /// The effective settings, one `key = value` per line, for the start-up log and --check-config.
    public var summary: [String] {
        var lines =
            [
                "config = \(sourcePath ?? "(embedded defaults)")",
                "store.path = \(storePath)",
                "store.durability = \(durability.rawValue)",
                "store.reserve = \(reserve)",
                "store.coalesce_wal = \(coalesceWAL)",
                "store.access_flush = \(accessFlush)s",
                "control.socket = \(socketPath)",
                "control.mode = \(String(format: "%04o", socketMode))",
                "control.admin_uids = \(adminUIDs)",
                "control.admin_groups = \(adminGroups)",
                "control.enforce_ownership = \(enforceOwnership)",
                "control.subuid_file = \(subuidFile.isEmpty ? "(none)" : subuidFile)",
                "control.max_request_bytes = \(maxRequestBytes)",
                "control.max_connections = \(maxConnections)",
            ] + limits.summary + [
                "files.roots = \(roots)",
                "files.unlink_delay = \(Units.formatDuration(unlinkDelay))",
                "files.orphan_grace = \(Units.formatDuration(orphanGrace))",
                "files.skip_open = \(skipOpenFiles)",
                "log.level = \(logLevel.rawValue)",
                "collections = \(templates.keys.map(\.string).sorted())",
                "indexes = \(indexes.map(\.name))",
            ]
        guard let p = policy else { return lines + ["policy = (none: nothing is evicted or expired)"] }
        lines += [
            "policy.interval = \(Units.formatDuration(p.interval))",
            "policy.max_bytes = \(p.maxBytes.map(String.init) ?? "(none)")",
            "policy.low_water = \(String(format: "%g%%", p.lowWater * 100))",
            "policy.min_free = \(p.minFree.map(String.init) ?? "(none)")",
            "policy.min_age = \(Units.formatDuration(p.minAge))",
            "policy.batch = \(p.batch)",
            "policy.order = \(p.order.rawValue)",
        ]
        lines += p.quotas.map { "policy.quota \($0.owner) = \($0.maxBytes)" }
        lines += p.ttls.map { t in
            "policy.ttl \(t.collection) = max_idle \(t.maxIdle.map(Units.formatDuration) ?? "-"), max_age \(t.maxAge.map(Units.formatDuration) ?? "-")"
        }
        return lines
    }
}

/// Where `files.roots` came from: it decides whether a missing root is created or refused.
public enum RootsOrigin: Sendable, Equatable {
    /// The embedded default: created (and tagged) at start when missing.
    case embeddedDefault
    /// The config file's `files.roots`, on this line: each root must already exist.
    case configured(line: Int?)
}

/// A configuration error: the file, line and key, and what is wrong. assetd exits 78.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// The file.
    public var file: String
    /// The line, when it can be told.
    public var line: Int?
    /// The key, dotted (`control.mode`).
    public var key: String?
    /// What is wrong.
    public var message: String

    public var description: String {
        var s = file
        if let line { s += ":\(line)" }
        if let key { s += ": \(key)" }
        return s + ": " + message
    }
}
