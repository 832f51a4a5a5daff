// Runs the built assetd in a temp folder (its own config, root, database and socket) and
// talks to it through the real socket, a raw socket for malformed input, and the real assetctl.

import AssetClient
import AssetStore
import Foundation
import Testing

/// Where the built executables are: next to the test bundle, or $ASSETD_BIN_DIR.
enum Binaries {
    static let directory: String = {
        if let dir = ProcessInfo.processInfo.environment["ASSETD_BIN_DIR"] { return dir }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("assetd").path) {
                return url.path
            }
        }
        return FileManager.default.currentDirectoryPath + "/.build/debug"
    }()
    static var assetd: String { directory + "/assetd" }
    static var assetctl: String { directory + "/assetctl" }
}

/// What a finished process did.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs a command to completion with a time limit.
func runProcess(
    _ path: String, _ args: [String], stdin: String? = nil, environment: [String: String]? = nil,
    timeout: Double = 60
) throws -> ProcessResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    if let environment { p.environment = environment }
    let out = Pipe(), err = Pipe(), input = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = input
    try withDefaultSignalMask { try p.run() }
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try? input.fileHandleForWriting.close()
    let deadline = Date().addingTimeInterval(timeout)
    // Read both pipes while waiting, so a chatty child never blocks on a full pipe.
    let outData = Box<Data>(), errData = Box<Data>()
    let group = DispatchGroup()
    for (pipe, box) in [(out, outData), (err, errData)] {
        group.enter()
        DispatchQueue.global().async {
            box.value = pipe.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
    }
    while p.isRunning && Date() < deadline { usleep(10_000) }
    if p.isRunning {
        p.terminate()
        p.waitUntilExit()
    }
    group.wait()
    return ProcessResult(
        status: p.terminationStatus, stdout: String(decoding: outData.value ?? Data(), as: UTF8.self),
        stderr: String(decoding: errData.value ?? Data(), as: UTF8.self))
}

final class Box<T>: @unchecked Sendable {  // handed between one reader thread and the waiter
    var value: T?
}

/// Runs `body` (a process spawn) with no signal blocked on this thread, so the child starts
/// with the empty mask a shell or systemd would give it, not the mask of a test-pool thread
/// (libdispatch workers block almost every signal, and a spawned child inherits that).
func withDefaultSignalMask<R>(_ body: () throws -> R) rethrows -> R {
    var empty = sigset_t(), saved = sigset_t()
    sigemptyset(&empty)
    pthread_sigmask(SIG_SETMASK, &empty, &saved)
    defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
    return try body()
}

/// A daemon of our own in a temp folder.
final class DaemonHarness {
    let dir: String
    let root: String
    let socket: String
    let database: String
    let configPath: String
    private(set) var process: Process?
    let logPath: String
    /// Lines added to the config's [control] section.
    var controlSection: String
    /// Lines added to the config's [store] section.
    var storeSection: String
    /// TOML appended to the config file.
    var extraConfig: String
    /// The config's log.level.
    var logLevel: String
    /// Lines added to the config's [files] section (after roots).
    var filesSection: String
    /// Variables added to the daemon's environment.
    var environment: [String: String] = [:]
    /// The umask assetd starts with, when not this process's.
    var startUmask: mode_t?

    /// `extraConfig` is appended to the config file (TOML), `controlSection` goes into [control].
    init(
        extraConfig: String = "", controlSection: String = "", filesSection: String = "", logLevel: String = "debug",
        storeSection: String = "", start: Bool = true
    ) throws {
        var template = Array("/tmp/assetd-e2e-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw POSIXError(.EIO) }
        dir = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }  // mkdtemp wrote a C string
        chmod(dir, 0o755)
        root = dir + "/root"
        socket = dir + "/run/control.sock"
        database = dir + "/state/assetd.sqlite"
        configPath = dir + "/assetd.toml"
        logPath = dir + "/assetd.log"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/run", withIntermediateDirectories: true)
        chmod(root, 0o777)
        chmod(dir + "/run", 0o755)
        self.controlSection = controlSection
        self.storeSection = storeSection
        self.extraConfig = extraConfig
        self.logLevel = logLevel
        self.filesSection = filesSection
        try writeConfig()
        if start { try self.start() }
    }

    /// The config text for this daemon, or for another one on `socket` and `database`.
    func configText(socket: String? = nil, database: String? = nil) -> String {
        """
        [store]
        path = "\(database ?? self.database)"
        \(storeSection)
        [control]
        socket = "\(socket ?? self.socket)"
        \(controlSection)
        [files]
        roots = ["\(root)"]
        \(filesSection)
        [log]
        level = "\(logLevel)"
        \(extraConfig)
        """
    }

    /// (Re)writes the config file from the current settings; a running daemon sees it on SIGHUP.
    func writeConfig() throws {
        try configText().write(toFile: configPath, atomically: true, encoding: .utf8)
    }

    /// Rewrites the config, sends SIGHUP and waits until the log says it was reloaded.
    func reload(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let before = log.components(separatedBy: "reloaded").count
        try writeConfig()
        guard let p = process else { return }
        kill(p.processIdentifier, SIGHUP)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if log.components(separatedBy: "reloaded").count > before { return }
            usleep(20_000)
        }
        Issue.record("assetd did not log a reload within 60 s", sourceLocation: sourceLocation)
    }

    deinit {
        if let p = process, p.isRunning {
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Starts assetd and waits until its socket answers ping. With `inheritSignalMask` the
    /// daemon starts with this thread's signal mask instead of an empty one.
    func start(arguments: [String]? = nil, inheritSignalMask: Bool = false) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Binaries.assetd)
        p.arguments = arguments ?? ["--config", configPath]
        if let startUmask {  // through a shell that sets it, then becomes assetd (same process)
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            let shell = "umask \(String(startUmask, radix: 8)) && exec \"$0\" \"$@\""
            p.arguments = ["-c", shell, Binaries.assetd] + (arguments ?? ["--config", configPath])
        }
        if !environment.isEmpty { p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        if !FileManager.default.fileExists(atPath: logPath) {
            guard FileManager.default.createFile(atPath: logPath, contents: nil) else { throw POSIXError(.EIO) }
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        p.standardError = log
        p.standardOutput = log
        if inheritSignalMask { try p.run() } else { try withDefaultSignalMask { try p.run() } }
        process = p
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if !p.isRunning { throw HarnessError.exited(p.terminationStatus, log: self.log) }
            if let c = try? ControlClient(socketPath: socket, timeout: 2), (try? c.call("ping")) != nil {
                c.close()
                return
            }
            usleep(20_000)
        }
        throw HarnessError.notReady(log: self.log)
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// SIGTERM (or another signal) and wait; returns the exit status.
    @discardableResult
    func stop(signal sig: Int32 = SIGTERM, timeout: Double = 60) -> Int32? {
        guard let p = process else { return nil }
        kill(p.processIdentifier, sig)
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(10_000) }
        if p.isRunning {
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            return nil
        }
        process = nil
        return p.terminationStatus
    }

    var isRunning: Bool { process?.isRunning ?? false }

    func client(timeout: Double = 60) throws -> ControlClient {
        try ControlClient(socketPath: socket, timeout: timeout)
    }

    /// Runs assetctl against this daemon.
    func assetctl(_ args: String..., stdin: String? = nil, environment: [String: String]? = nil) throws -> ProcessResult
    {
        try runProcess(Binaries.assetctl, ["--socket", socket] + args, stdin: stdin, environment: environment)
    }

    /// Creates a file below the root.
    @discardableResult
    func makeFile(_ rel: String, size: Int = 10) throws -> String {
        let path = root + "/" + rel
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: path, contents: Data(repeating: 1, count: size)) else {
            throw POSIXError(.EIO)
        }
        return path
    }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }
}

enum HarnessError: Error, CustomStringConvertible {
    case exited(Int32, log: String)
    case notReady(log: String)
    var description: String {
        switch self {
        case .exited(let s, let log): return "assetd exited with \(s):\n\(log)"
        case .notReady(let log): return "assetd did not become ready:\n\(log)"
        }
    }
}

/// A raw connection for malformed input: write bytes, read reply lines. One thread may send
/// while another reads: they share only the descriptor.
final class RawConnection: @unchecked Sendable {
    let fd: Int32
    private var buffer = [UInt8]()
    /// How much of `buffer` holds no newline: a long line is scanned once, not again at
    /// every chunk (a reply of megabytes took seconds, long enough to be dropped as behind).
    private var scanned = 0

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard r == 0 else { close(fd); throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            off += n
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Sends what fits without blocking; the number of bytes sent (0 when the socket is full).
    func trySend(_ bytes: ArraySlice<UInt8>) -> Int {
        let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        return max(n, 0)
    }

    /// How long `readLine` and `isClosedByPeer` wait for bytes.
    func setReceiveTimeout(_ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The next line as JSON, or nil at EOF / timeout.
    func readLine() -> JSONValue? {
        readRawLine().flatMap { try? JSONValue.parse(String(decoding: $0, as: UTF8.self)) }
    }

    /// The next line's bytes without its newline, or nil at EOF / timeout.
    func readRawLine() -> [UInt8]? {
        while true {
            if let nl = buffer[scanned...].firstIndex(of: 10) {
                let line = Array(buffer[..<nl])
                buffer.removeFirst(nl + 1)
                scanned = 0
                return line
            }
            scanned = buffer.count
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[..<n])
        }
    }

    /// True once the daemon closed the connection.
    func isClosedByPeer() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n == 0 { return true }
            if n < 0 { return false }
        }
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }
}
