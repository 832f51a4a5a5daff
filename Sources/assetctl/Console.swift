// Where assetctl's output goes and how it ends: results on stdout, `assetctl: …` on stderr, and the
// exit statuses of assetctl(1), EXIT STATUS. Writes go straight to the descriptors, unbuffered, so
// a watch stream is visible line by line and nothing is lost at exit.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The documented exit statuses.
enum ExitStatus {
    /// The command did what was asked.
    static let success: Int32 = 0
    /// The daemon answered with an error, an object was missing, or verify found problems.
    static let failure: Int32 = 1
    /// The command line was wrong (EX_USAGE).
    static let usage: Int32 = 64
    /// The daemon cannot be reached (EX_UNAVAILABLE).
    static let unavailable: Int32 = 69
    /// The configuration is wrong (EX_CONFIG).
    static let configuration: Int32 = 78
}

/// An outcome that ends assetctl with a message on stderr and a status.
struct CLIFailure: Error {
    /// The message, without the `assetctl: ` prefix.
    var message: String
    /// The exit status.
    var status: Int32
    /// True when the daemon is busy with another maintenance run, or another process holds
    /// the database: a maintenance command skips instead of failing (cron runs never overlap).
    var maintenanceBusy = false

    init(_ message: String, status: Int32 = ExitStatus.failure, maintenanceBusy: Bool = false) {
        self.message = message
        self.status = status
        self.maintenanceBusy = maintenanceBusy
    }
}

/// Unbuffered writes to stdout and stderr.
enum Console {
    /// Writes `text` to stdout as is.
    static func out(_ text: String) { write(fd: 1, text) }

    /// Writes `assetctl: <message>` and a newline to stderr.
    static func error(_ message: String) { write(fd: 2, "assetctl: \(message)\n") }

    /// Writes `text` to stderr as is (progress lines).
    static func status(_ text: String) { write(fd: 2, text) }

    /// True when stderr is a terminal (then long commands draw progress).
    static var stderrIsTerminal: Bool { isatty(2) == 1 }

    private static func write(fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                writeDescriptor(fd, raw.baseAddress! + done, raw.count - done)  // non-empty: done < count
            }
            if n > 0 {
                done += n
            } else if n < 0, errno == EINTR {
                continue
            } else {
                return  // stdout closed or full disk: nothing sensible left to report it on
            }
        }
    }

    /// Reads all of stdin as UTF-8 text.
    static func readStandardInput() throws(CLIFailure) -> String {
        try readAll(0, what: "standard input")
    }

    /// Reads all of the file at `path` as UTF-8 text.
    static func readFile(_ path: String) throws(CLIFailure) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        return try readAll(fd, what: path)
    }

    /// Reads `fd` to its end; `what` names it in the error.
    private static func readAll(_ fd: Int32, what: String) throws(CLIFailure) -> String {
        var data = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.count
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, count) }  // 64 KiB, never empty
            if n > 0 {
                data += chunk[0..<n]
            } else if n == 0 {
                return String(decoding: data, as: UTF8.self)
            } else if errno != EINTR {
                throw CLIFailure("cannot read \(what): \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// write(2), out of reach of Console's method of the same name.
private func writeDescriptor(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, bytes, count)
}

/// exit(3), out of reach of ParsableCommand's `exit(withError:)`.
func terminate(_ status: Int32) -> Never {
    exit(status)
}
