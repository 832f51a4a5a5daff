// The root command: global options (where the engine is, output form), the subcommand list,
// and the entry point that turns every outcome into an exit status (assetctl(1), EXIT STATUS).

import ArgumentParser
import AssetClient
import AssetctlText
import JSON
import ControlProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `assetctl [--socket PATH | --db PATH] [--config PATH] [--json] <command>`.
struct AssetCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assetctl",
        abstract: "Control assetd, the file-asset lifecycle manager.",
        discussion: """
            Talks to assetd over its control socket, or with --db to the database directly \
            while no daemon runs. Exit status: 0 success (and a maintenance command skipped because \
            another run is in progress); 1 the daemon answered with an error or verify found \
            problems that remain; \
            64 usage; 69 the daemon cannot be reached; 78 configuration.
            """,
        version: Version.product,
        subcommands: [
            PingCommand.self, ObjectPutCommand.self, ObjectGetCommand.self, ObjectDeleteCommand.self,
            ObjectTouchCommand.self, ObjectListCommand.self, EdgeGroup.self, IndexQueryCommand.self,
            IndexAggregateCommand.self, FileGetCommand.self, WatchCommand.self, StatsCommand.self,
            SweepCommand.self, PendingCommand.self, TemplateGroup.self, IndexGroup.self,
            TransactCommand.self, PolicyEnforceCommand.self, PolicyEvictCommand.self, PolicyExpireCommand.self,
            LeaseGroup.self, ObjectPinCommand.self, ObjectUnpinCommand.self, VerifyCommand.self, BackupCommand.self,
            VacuumCommand.self, CheckpointCommand.self, ForgetCommand.self, RestoreCommand.self,
            ShutdownCommand.self,
        ])

    @Option(
        help: ArgumentHelp(
            "The control socket (default: $ASSETD_SOCKET, else control.socket of the config file, else the daemon's default).",
            valueName: "path"))
    var socket: String?

    @Option(help: ArgumentHelp("Work on this database file directly instead of the daemon.", valueName: "path"))
    var db: String?

    @Option(
        help: ArgumentHelp(
            "The daemon's config file: its control.socket, or with --db its roots, templates and indexes.",
            valueName: "path"))
    var config: String?

    @Flag(help: "Print each result as one line of compact JSON.")
    var json = false

    func validate() throws {
        if socket != nil && db != nil { throw ValidationError("--socket and --db exclude each other") }
    }

    /// The socket this invocation talks to (without --db): --socket, else $ASSETD_SOCKET, else
    /// `control.socket` of the --config file or of the daemon's default config file, else the
    /// daemon's default.
    func socketPath() throws(CLIFailure) -> String {
        let environment = Environment.variables
        if socket == nil, environment["ASSETD_SOCKET", default: ""].isEmpty,
            let file = config ?? DaemonSettings.defaultConfigFile()
        {
            return try DaemonSettings.socketPath(configPath: file)
        }
        return SocketLocation.resolve(
            explicit: socket, environment: environment, isRoot: geteuid() == 0, home: Environment.home)
    }

    /// Connects to the daemon, or opens the database with --db.
    /// `restoring`: a marked copy opens writable (`restore`), not read-only.
    func backend(restoring: Bool = false) throws(CLIFailure) -> Backend {
        if let db {
            let path = CLIParams.absolutePath(db, cwd: Environment.workingDirectory)
            // The engine would create a missing database: a mistyped path would then verify
            // "clean" and leave a new database behind.
            var info = stat()
            if stat(path, &info) != 0, errno == ENOENT {
                throw CLIFailure("no database at \(path); --db opens an existing one (assetd creates it)")
            }
            return try Backend(target: .database(path), configPath: config, restoring: restoring)
        }
        return try Backend(target: .socket(try socketPath()), configPath: config)
    }

    /// One call on a fresh backend.
    func call(_ method: String, _ params: JSONValue = [:]) throws(CLIFailure) -> JSONValue {
        try backend().call(method, params)
    }

    /// Prints `result`: compact JSON with --json, else what `human` makes of it.
    func emit(_ result: JSONValue, _ human: (JSONValue) -> String) {
        Console.out(json ? result.serialized() + "\n" : human(result))
    }

    /// One call on a fresh backend, its result printed as ``emit(_:_:)`` prints it.
    func show(_ method: String, _ params: JSONValue = [:], _ human: (JSONValue) -> String) throws(CLIFailure) {
        emit(try call(method, params), human)
    }

    /// Parses the command line, runs the command, and exits with its status.
    static func runMain() -> Never {
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            exit(withError: error)
        }
        // `assetctl` or `assetctl edge` alone names no command: a usage error, not a success, so
        // a script whose command word came out empty does not pass silently.
        let chosen = type(of: command)
        if !chosen.configuration.subcommands.isEmpty {
            Console.status(helpMessage(for: chosen))
            terminate(ExitStatus.usage)
        }
        do {
            try command.run()
            terminate(ExitStatus.success)
        } catch let failure as CLIFailure {
            Console.error(failure.message)
            terminate(failure.status)
        } catch let usage as ValidationError {
            // Found while building params (bad JSON, a bad size): a usage error like the parser's.
            Console.error(usage.message)
            terminate(ExitStatus.usage)
        } catch {
            exit(withError: error)
        }
    }
}

/// The process environment, read once.
enum Environment {
    /// Every variable.
    static let variables: [String: String] = {
        var out: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            if let eq = text.firstIndex(of: "=") {
                out[String(text[..<eq])] = String(text[text.index(after: eq)...])
            }
            p += 1
        }
        return out
    }()

    /// The home folder from the password database, for when $HOME is unset.
    static var home: String? {
        guard let pw = getpwuid(geteuid()), let dir = pw.pointee.pw_dir else { return nil }
        return String(cString: dir)
    }

    /// The working folder, for making relative paths absolute.
    static var workingDirectory: String {
        guard let p = getcwd(nil, 0) else { return "/" }
        defer { free(p) }
        return String(cString: p)
    }
}

/// Shared renderings of results.
enum Render {
    /// `commit N` for a write's result; any other result as a listing.
    static func commit(_ result: JSONValue) -> String {
        if let c = result["commit"] { return "commit \(Formatting.cell(c))\n" }
        if case .object(let o) = result, o.isEmpty { return "" }
        return Formatting.listing(result)
    }

    /// A CLIParamError as the usage error it is.
    static func usage(_ body: () throws(CLIParamError) -> JSONValue) throws -> JSONValue {
        do {
            return try body()
        } catch {
            throw ValidationError(error.message)
        }
    }
}
