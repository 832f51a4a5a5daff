// Helpers the end-to-end suites share: expecting a JSON-RPC error, polling for what happens
// soon after, short calls on a ControlClient, a process left running in the background, work
// on another thread, and assetctl run as `nobody`. Nothing here knows the daemon's insides.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

// MARK: - Errors

/// The JSON-RPC error `body` fails with; records an issue and returns nil if it succeeds or
/// fails in another way.
func rpcError(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws(ClientError) -> JSONValue
) -> RPCError? {
    do {
        let result = try body()
        Issue.record("expected an error reply, got \(result.serialized())", sourceLocation: sourceLocation)
    } catch {
        if case .rpc(let e) = error { return e }
        Issue.record("expected an error reply, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// Expects `body` to fail with JSON-RPC `code` and, when given, `data.code`; returns the error.
@discardableResult
func expectRPCError(
    _ code: Int, _ dataCode: String? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws(ClientError) -> JSONValue
) -> RPCError? {
    guard let e = rpcError(sourceLocation: sourceLocation, body) else { return nil }
    #expect(e.code == code, "\(e)", sourceLocation: sourceLocation)
    if let dataCode { #expect(e.stableCode == dataCode, "\(e)", sourceLocation: sourceLocation) }
    return e
}

/// The JSON-RPC error codes (assetd(8), CONTROL PROTOCOL, Errors).
enum Code {
    static let parse = RPCError.parseErrorCode
    static let invalidRequest = RPCError.invalidRequestCode
    static let methodNotFound = RPCError.methodNotFoundCode
    static let invalidParams = RPCError.invalidParamsCode
    static let application = RPCError.applicationCode
}

// MARK: - Time

/// Polls `condition` every 20 ms until it holds or `timeout` seconds pass; true if it held.
/// The default only runs out on a real hang, however loaded the machine.
func eventually(timeout: Double = 60, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return true }
        if Date() > deadline { return false }
        usleep(20_000)
    }
}

/// Waits until the wall clock is past `timestamp` (Unix seconds, as the daemon stamps objects),
/// so that a timestamp taken from now on differs from it.
func passClock(_ timestamp: Double) {
    _ = eventually(timeout: 60) { Date().timeIntervalSince1970 > timestamp + 0.002 }
}

/// Waits until no signal sent to process `pid` is pending (each was handled or acted on);
/// false after 60 s.
func signalsDelivered(to pid: pid_t) -> Bool {
    eventually(timeout: 60) {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return true }
        return status.split(separator: "\n").allSatisfy { !$0.hasPrefix("ShdPnd:") || $0.hasSuffix("0000000000000000") }
    }
}

// MARK: - Calls

/// `{"collection": c, "key": k}`.
func ref(_ collection: String, _ key: String) -> JSONValue {
    ["collection": .string(collection), "key": .string(key)]
}

extension ControlClient {
    /// object.put; returns the commit.
    @discardableResult
    func putObject(
        _ collection: String, _ key: String, _ value: JSONValue = [:], owner: String? = nil
    ) throws(ClientError) -> Int64 {
        var p: [String: JSONValue] = ["collection": .string(collection), "key": .string(key), "value": value]
        if let owner { p["owner"] = .string(owner) }
        let r = try call("object.put", .object(p))
        guard let commit = r["commit"]?.intValue else { throw .io("object.put answered \(r.serialized())") }
        return commit
    }

    /// object.get: the object or null.
    func getObject(_ collection: String, _ key: String) throws(ClientError) -> JSONValue {
        try call("object.get", ref(collection, key))
    }

    /// object.delete: `{commit, deleted, unlinks_queued}`.
    @discardableResult
    func deleteObject(_ collection: String, _ key: String) throws(ClientError) -> JSONValue {
        try call("object.delete", ref(collection, key))
    }

    /// edge.add.
    @discardableResult
    func addEdge(
        _ name: String, from source: JSONValue, to destination: JSONValue, rules: [String]
    ) throws(ClientError) -> JSONValue {
        try call(
            "edge.add",
            [
                "name": .string(name), "source": source, "destination": destination,
                "rules": .array(rules.map(JSONValue.string)),
            ])
    }
}

extension JSONValue {
    /// The `{collection, key}` pairs of an array as "collection/key" strings.
    var refTexts: [String] {
        (arrayValue ?? []).map { "\($0["collection"]?.stringValue ?? "?")/\($0["key"]?.stringValue ?? "?")" }
    }

    /// The strings of an array.
    var strings: [String] { (arrayValue ?? []).compactMap(\.stringValue) }
}

// MARK: - Threads and processes

/// A value shared between a test and the threads it starts.
final class Locked<T>: @unchecked Sendable {  // every access holds `lock`
    private let lock = NSLock()
    private var value: T

    init(_ value: T) { self.value = value }

    func withLock<R>(_ body: (inout T) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: T { withLock { $0 } }
}

/// Runs `body` on a thread of its own; wait on the semaphore for it to end.
func onThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        body()
        done.signal()
    }
    return done
}

/// A process left running while the test goes on, its stdout collected line by line.
final class BackgroundProcess: @unchecked Sendable {  // lines are guarded by `lines`' lock
    let process = Process()
    private let lines = Locked<[String]>([])
    private let reader: DispatchSemaphore

    init(_ path: String, _ args: [String]) throws {
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = args
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let p = process
        try withDefaultSignalMask { try p.run() }
        let handle = out.fileHandleForReading
        let lines = self.lines
        reader = onThread {
            var partial = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                partial.append(chunk)
                while let nl = partial.firstIndex(of: 10) {
                    let line = String(decoding: partial[partial.startIndex..<nl], as: UTF8.self)
                    partial.removeSubrange(partial.startIndex...nl)
                    lines.withLock { $0.append(line) }
                }
            }
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The lines printed so far.
    var output: [String] { lines.current }

    /// Waits until a line satisfies `match`; true if one did within `timeout` seconds.
    func waitForLine(timeout: Double = 60, where match: (String) -> Bool) -> Bool {
        eventually(timeout: timeout) { output.contains(where: match) }
    }

    /// Sends `signal`, waits for the exit and the last output; the exit status.
    @discardableResult
    func stop(signal sig: Int32 = SIGINT) -> Int32 {
        if process.isRunning { kill(process.processIdentifier, sig) }
        if !eventually(timeout: 60, { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        _ = reader.wait(timeout: .now() + 60)
        return process.terminationStatus
    }
}

/// Runs assetd once with `args` (a check, or a start expected to fail).
func runAssetd(_ args: [String], timeout: Double = 60) throws -> ProcessResult {
    try runProcess(Binaries.assetd, args, timeout: timeout)
}

/// Leaves a socket file at `path` with nothing listening: bound, then closed without unlink.
func makeStaleSocket(at path: String) throws {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    defer { close(fd) }
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
    let r = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard r == 0, listen(fd, 1) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
}

/// The permission bits of a file, or nil if it is not there.
func permissions(of path: String) -> mode_t? {
    var st = stat()
    guard lstat(path, &st) == 0 else { return nil }
    return st.st_mode & 0o7777
}

// MARK: - Another user

/// The unprivileged user the access tests act as.
enum Nobody {
    static let uid: UInt32 = 65534
    static let name = "nobody"
    /// Tests as another user need root (to switch) and setpriv.
    static let canSwitch = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
}

extension DaemonHarness {
    /// Runs assetctl as uid/gid 65534 with no supplementary groups.
    func assetctlAsNobody(_ args: String...) throws -> ProcessResult {
        try runProcess(
            "/usr/bin/setpriv",
            ["--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", Binaries.assetctl, "--socket", socket]
                + args)
    }

    /// Waits for the daemon process to exit by itself; its status, or nil after `timeout`.
    func waitForExit(timeout: Double = 60) -> Int32? {
        guard let p = process else { return nil }
        guard eventually(timeout: timeout, { !p.isRunning }) else { return nil }
        p.waitUntilExit()
        return p.terminationStatus
    }
}
