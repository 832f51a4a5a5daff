// `assetctl lease acquire [--ttl D] [--object C/K]… [--file P]… -- COMMAND…` → lease.acquire,
// held over the socket while COMMAND runs: released when it exits (or when assetctl dies,
// since the lease ends with the connection). Exits with COMMAND's status (128+N for signal N).

import ArgumentParser
import AssetClient
import AssetctlText
import AssetStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `lease acquire`.
struct LeaseAcquireCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "acquire", abstract: "Protect objects and files from eviction while a command runs.")

    @ParentCommand var root: AssetCtl

    @Option(help: ArgumentHelp("The lease's longest life (at most 1d).", valueName: "duration")) var ttl = "1d"
    @Option(name: .customLong("object"), help: ArgumentHelp("An object to protect.", valueName: "collection/key"))
    var objects: [String] = []
    @Option(name: .customLong("file"), help: ArgumentHelp("A file to protect (made absolute).", valueName: "path"))
    var files: [String] = []
    @Argument(parsing: .postTerminator, help: "The command to run while the lease is held (after --).")
    var command: [String] = []

    func validate() throws {
        if command.isEmpty { throw ValidationError("give the command to run after --") }
        if objects.isEmpty && files.isEmpty { throw ValidationError("give at least one --object or --file") }
        if Units.duration(ttl) == nil { throw ValidationError("--ttl: not a duration: \(ttl)") }
        for o in objects where !o.contains("/") { throw ValidationError("--object must be collection/key: \(o)") }
    }

    func run() throws {
        let refs: [JSONValue] = objects.map { o in
            let slash = o.firstIndex(of: "/")!  // checked in validate
            return CLIParams.ref(String(o[..<slash]), String(o[o.index(after: slash)...]))
        }
        let paths = files.map { JSONValue.string(CLIParams.absolutePath($0, cwd: Environment.workingDirectory)) }
        let backend = try root.backend()
        let lease = try backend.call(
            "lease.acquire", ["ttl": .string(ttl), "objects": .array(refs), "files": .array(paths)])
        let status = try Child.run(command)
        // Closing the connection would end it too; releasing says so explicitly.
        if let id = lease["lease"] { _ = try? backend.call("lease.release", ["lease": id]) }
        terminate(status)
    }
}

/// A command run to completion, as system(3) runs one: assetctl ignores SIGINT and SIGQUIT
/// meanwhile (the child gets them from the terminal) so the lease outlives an interrupt
/// only as long as the child does.
enum Child {
    /// Runs `argv` (looked up in PATH) and returns its exit status, 128+N for signal N.
    static func run(_ argv: [String]) throws(CLIFailure) -> Int32 {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGQUIT)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        let oldInt = signal(SIGINT, SIG_IGN)
        let oldQuit = signal(SIGQUIT, SIG_IGN)
        defer {
            signal(SIGINT, oldInt)
            signal(SIGQUIT, oldQuit)
        }
        var cArgs = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        var pid = pid_t()
        let rc = posix_spawnp(&pid, argv[0], nil, &attributes, &cArgs, environ)
        guard rc == 0 else { throw CLIFailure("cannot run \(argv[0]): \(String(cString: strerror(rc)))", status: 127) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw CLIFailure("waitpid: \(String(cString: strerror(errno)))") }
        }
        let signalNumber = status & 0x7f
        return signalNumber == 0 ? (status >> 8) & 0xff : 128 + signalNumber
    }
}
