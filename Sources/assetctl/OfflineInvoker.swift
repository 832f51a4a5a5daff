// --db: the same engine as assetd, opened in this process with the same lock, and the
// socket named by a --config file. The one file that knows AssetService: LocalInvoker runs
// the daemon's own method table (reads work while a daemon holds the database, writes fail
// with data.code "busy"), and DaemonConfig reads the config file as assetd does.

import AssetService
import AssetStore
import ControlProtocol
import JSON

/// Methods run in-process on a database file (`assetctl --db PATH`).
struct OfflineInvoker: Invoker {
    private let local: LocalInvoker

    /// Opens the database with the settings of the config file: a bad config file exits 78,
    /// a database that cannot be opened exits 1.
    init(databasePath: String, configPath: String?, restoring: Bool = false) throws(CLIFailure) {
        do {
            local = try LocalInvoker(databasePath: databasePath, configPath: configPath, restoring: restoring)
            for w in local.store.openWarnings { Console.error("warning: \(w)") }
            local.warn = { Console.error("warning: \($0)") }
        } catch let e as ConfigError {
            throw CLIFailure(e.description, status: ExitStatus.configuration)
        } catch {
            throw Backend.failure(error, target: .database(databasePath))
        }
    }

    /// `restore`: the copy made live (LocalInvoker.restore).
    func restore(force: Bool) throws(RPCError) -> RestoreOutcome { try local.restore(force: force) }

    func call(_ method: String, _ params: JSONValue, progress: (@Sendable (JSONValue) -> Void)?) throws -> JSONValue {
        if let e = local.refusal(method, params) { throw CLIFailure(e.description, status: ExitStatus.configuration) }
        if method == "policy.enforce" { for w in local.enforceWarnings { Console.error("warning: \(w)") } }
        var forward: (@Sendable ([String: JSONValue]) -> Void)?
        if let progress { forward = { fields in progress(.object(fields)) } }
        return try local.call(method, params, progress: forward)
    }
}

/// The daemon's config file, read as assetd reads it.
enum DaemonSettings {
    /// `control.socket` of the config file at `path`; a bad file exits 78.
    /// The daemon's own config file, when it exists (/etc/assetd/assetd.toml as root).
    static func defaultConfigFile() -> String? { DaemonConfig.defaultFile() }

    static func socketPath(configPath path: String) throws(CLIFailure) -> String {
        do {
            // Only the socket: a [policy] value refused as a slip must not stop talking to the daemon.
            return try DaemonConfig.load(path: path, deferringPolicyRefusals: true).socketPath
        } catch {
            throw CLIFailure(error.description, status: ExitStatus.configuration)
        }
    }
}
