// The engine behind a command: assetd over its socket, or the database opened directly with
// --db. Commands see only `Invoker`; Backend turns every failure into a message and an exit
// status (assetctl(1), EXIT STATUS), in this one place.

import AssetClient
import AssetService
import AssetStore
import ControlProtocol

/// Runs one method with its params and returns its result.
protocol Invoker {
    /// The result of `method`; throws ClientError (socket) or RPCError (either). `progress`
    /// gets the `{phase, done, total}` reports of a request sent with `progress: true`.
    func call(_ method: String, _ params: JSONValue, progress: (@Sendable (JSONValue) -> Void)?) throws -> JSONValue
}

/// Methods sent to assetd over the control socket.
struct SocketInvoker: Invoker {
    /// The connection.
    let client: ControlClient

    func call(_ method: String, _ params: JSONValue, progress: (@Sendable (JSONValue) -> Void)?) throws -> JSONValue {
        try client.call(method, params, progress: progress)
    }
}

/// The invoker a command runs on, with the failures mapped to messages and exit statuses.
final class Backend {
    /// What the commands talk to.
    enum Target {
        /// assetd on this socket path.
        case socket(String)
        /// This database file, opened in-process (`--db`).
        case database(String)
    }

    /// What was connected or opened.
    let target: Target
    private let invoker: any Invoker
    /// The socket connection, for watch; nil with --db.
    let client: ControlClient?

    /// Connects to the socket or opens the database.
    init(target: Target, configPath: String?, restoring: Bool = false) throws(CLIFailure) {
        self.target = target
        switch target {
        case .socket(let path):
            do {
                let client = try ControlClient(socketPath: path)
                self.client = client
                invoker = SocketInvoker(client: client)
            } catch {
                throw Backend.failure(error, target: target)
            }
        case .database(let path):
            client = nil
            invoker = try OfflineInvoker(databasePath: path, configPath: configPath, restoring: restoring)
        }
    }

    /// The result of `method`, or a CLIFailure saying what went wrong.
    func call(
        _ method: String, _ params: JSONValue = [:], progress: (@Sendable (JSONValue) -> Void)? = nil
    ) throws(CLIFailure) -> JSONValue {
        do {
            return try invoker.call(method, params, progress: progress)
        } catch {
            throw Backend.failure(error, target: target)
        }
    }

    /// The result of `method`, or the error the method answered (for a command that goes on
    /// past some); a CLIFailure when there was no answer.
    func answer(_ method: String, _ params: JSONValue) throws(CLIFailure) -> Result<JSONValue, RPCError> {
        do {
            return .success(try invoker.call(method, params, progress: nil))
        } catch {
            if let e = Backend.answered(error) { return .failure(e) }
            throw Backend.failure(error, target: target)
        }
    }

    /// The error the method answered, if `error` is one (over the socket or in process).
    static func answered(_ error: any Error) -> RPCError? {
        switch error {
        case ClientError.rpc(let e): return e
        case let e as RPCError: return e
        case let e as StoreError: return RPCError(e)
        default: return nil
        }
    }

    /// Makes the copy opened with --db live (`restore`).
    func restore(force: Bool) throws(CLIFailure) -> RestoreOutcome {
        guard let offline = invoker as? OfflineInvoker else {
            throw CLIFailure("restore works on a database file (--db)", status: ExitStatus.usage)
        }
        do {
            return try offline.restore(force: force)
        } catch {
            throw Backend.failure(error, target: target)
        }
    }

    /// The message and exit status for an error of a connect or a call.
    static func failure(_ error: any Error, target: Target) -> CLIFailure {
        if let failure = error as? CLIFailure { return failure }
        if let e = answered(error) { return rpcFailure(e, target: target) }
        let place: String
        switch target {
        case .socket(let path): place = path
        case .database(let path): place = path
        }
        switch error {
        case ClientError.unreachable(let why):
            return CLIFailure("cannot reach assetd at \(place): \(why)", status: ExitStatus.unavailable)
        case ClientError.io(let why):
            return CLIFailure("lost the connection to assetd at \(place): \(why)", status: ExitStatus.unavailable)
        case ClientError.closed:
            return CLIFailure("assetd at \(place) closed the connection", status: ExitStatus.unavailable)
        default:
            return CLIFailure(String(describing: error))
        }
    }

    private static func rpcFailure(_ e: RPCError, target: Target) -> CLIFailure {
        // A daemon's maintenance run, or a database another process holds: what cron skips.
        let held = e.stableCode == "busy" && (e.data?["detail"]?["running"] != nil || e.data?["detail"]?["held"] != nil)
        if case .database(let path) = target, e.stableCode == "busy" {
            // The lock is held by a daemon: reads worked, this write did not.
            return CLIFailure("\(path): \(e.message)", maintenanceBusy: held)
        }
        return CLIFailure(e.message, maintenanceBusy: held)
    }
}
