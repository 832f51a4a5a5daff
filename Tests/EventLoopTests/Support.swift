// Fixtures shared by the event-loop tests, in libuv's style: callbacks count, the loop runs
// until idle (a watchdog stops it if a test hangs), and every test ends by closing the loop
// with no handle left. One serialized root suite, because listeners change the process umask.

import EventLoop
import Glibc
import Synchronization
import Testing

/// The root of every event-loop suite; serialized because umask is process-wide.
@Suite(.serialized) struct EventLoopTests {}

/// Runs `loop` until no active handle or request remains. If that takes longer than
/// `timeout`, records an issue, closes every handle and finishes their close callbacks.
func runUntilIdle(_ loop: Loop, timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation) {
    let watchdog: EventLoop.Timer
    do { watchdog = try Timer(loop: loop) } catch {
        Issue.record(error, sourceLocation: sourceLocation)
        return
    }
    var timedOut = false
    do {
        try watchdog.start(after: timeout) {
            timedOut = true
            loop.stop()
        }
    } catch { Issue.record(error, sourceLocation: sourceLocation) }
    watchdog.unref()
    loop.run()
    if timedOut {
        Issue.record("the loop was still busy after \(timeout) s", sourceLocation: sourceLocation)
        loop.closeAllHandles()
    } else {
        watchdog.close()
    }
    loop.run()
}

/// libuv's MAKE_VALGRIND_HAPPY: nothing of ours is left open and `uv_loop_close` succeeds.
func expectClosesCleanly(_ loop: Loop, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(loop.openHandleCount == 0, sourceLocation: sourceLocation)
    #expect(throws: Never.self, sourceLocation: sourceLocation) { try loop.close() }
}

/// A value shared between threads behind a lock.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<Result>(_ body: (inout Value) -> Result) -> Result { mutex.withLock { body(&$0) } }
    var value: Value { withLock { $0 } }
}

/// The calling thread's id, to tell the loop thread from pool threads.
var currentThread: UInt { UInt(pthread_self()) }

/// A fresh directory under /tmp (short, so socket paths fit), removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        var template = Array("/tmp/evl.XXXXXX".utf8CString)
        path = template.withUnsafeMutableBufferPointer { buffer in
            let made = mkdtemp(buffer.baseAddress!)  // baseAddress!: the array is not empty
            precondition(made != nil, "mkdtemp failed: errno \(errno)")
            return String(cString: buffer.baseAddress!)
        }
    }

    /// `path/name`.
    func file(_ name: String) -> String { path + "/" + name }

    /// The names in the directory.
    var entries: [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    func remove() {
        for name in entries { unlink(file(name)) }
        rmdir(path)
    }
}

/// The permission bits of the file at `path`, or nil if it does not exist.
func permissions(of path: String) -> mode_t? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o7777
}

/// A deterministic, non-repeating-looking byte pattern.
func pattern(count: Int, seed: UInt8 = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8 &+ Int(seed)) }
}
