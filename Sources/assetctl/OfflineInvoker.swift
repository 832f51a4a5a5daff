// --db: the same engine as assetd, opened in this process with the same lock. The one file
// that knows AssetDaemon; its LocalInvoker runs the daemon's own method table, so reads work
// while a daemon holds the database and writes fail with data.code "busy".

import AssetDaemon
import AssetStore
import ControlProtocol

/// Methods run in-process on a database file (`assetctl --db PATH`).
struct OfflineInvoker: Invoker {
    private let local: LocalInvoker

    /// Opens the database (and the config file for roots, templates and indexes). A store
    /// error exits 1; any other error is the config file's and exits 78.
    init(databasePath: String, configPath: String?) throws(CLIFailure) {
        do {
            local = try LocalInvoker(databasePath: databasePath, configPath: configPath)
        } catch let e as RPCError {
            throw Backend.failure(e, target: .database(databasePath), method: nil)
        } catch let e as StoreError {
            throw Backend.failure(e, target: .database(databasePath), method: nil)
        } catch {
            throw CLIFailure(String(describing: error), status: ExitStatus.configuration)
        }
    }

    func call(_ method: String, _ params: JSONValue) throws -> JSONValue {
        try local.call(method, params)
    }
}
