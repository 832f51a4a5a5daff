// Listeners in a temp directory: the socket file has the requested mode whatever the umask,
// a path too long for sun_path is refused before anything is created, an existing path is
// EADDRINUSE, and closing the listener leaves the socket file for the daemon to unlink.

import CUV
import EventLoop
import Glibc
import Testing

extension EventLoopTests {
    @Suite struct PipeListenerTests {
        @Test(
            "the socket file has the requested mode regardless of the umask",
            arguments: [mode_t(0o600), 0o660], [mode_t(0o000), 0o022, 0o077, 0o002])
        func socketModeIgnoresUmask(mode: mode_t, processUmask: mode_t) throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let saved = umask(processUmask)
            defer { umask(saved) }
            let loop = try Loop()
            let path = directory.file("control.sock")
            let listener = try PipeListener(loop: loop, path: path, mode: mode) { $0.close() }
            #expect(permissions(of: path) == mode)
            #expect(umask(processUmask) == processUmask)  // restored after the bind
            listener.close()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }

        @Test("a path one byte too long for sun_path throws ENAMETOOLONG before binding")
        func tooLongPathIsRefused() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let loop = try Loop()
            let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
            let prefix = directory.path + "/"
            let longest = prefix + String(repeating: "s", count: capacity - 1 - prefix.utf8.count)
            let tooLong = longest + "x"
            let error = #expect(throws: UVError.self) {
                try PipeListener(loop: loop, path: tooLong, mode: 0o600) { $0.close() }
            }
            #expect(error?.code == UV_ENAMETOOLONG.rawValue)
            #expect(error?.call == "uv_pipe_bind")
            #expect(directory.entries.isEmpty)  // nothing bound at a truncated path
            #expect(loop.openHandleCount == 0)

            let listener = try PipeListener(loop: loop, path: longest, mode: 0o600) { $0.close() }
            #expect(permissions(of: longest) == 0o600)
            listener.close()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }

        @Test("binding an existing path fails with EADDRINUSE and leaves it alone")
        func existingPathIsInUse() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let loop = try Loop()
            let path = directory.file("control.sock")
            let first = try PipeListener(loop: loop, path: path, mode: 0o600) { $0.close() }
            let error = #expect(throws: UVError.self) {
                try PipeListener(loop: loop, path: path, mode: 0o660) { $0.close() }
            }
            #expect(error?.code == UV_EADDRINUSE.rawValue)
            #expect(error?.description == "bind: EADDRINUSE (address already in use)")
            if let error { #expect(UVError.Code.addressInUse ~= error) }
            #expect(permissions(of: path) == 0o600)

            let regular = directory.file("plain")
            close(open(regular, O_CREAT | O_WRONLY, 0o644))
            #expect(throws: UVError.self) { try PipeListener(loop: loop, path: regular, mode: 0o600) { $0.close() } }

            var closed = 0
            first.close { closed += 1 }
            first.close { closed += 1 }
            runUntilIdle(loop)
            #expect(closed == 2)
            #expect(permissions(of: path) == 0o600)  // close does not unlink: the daemon does
            expectClosesCleanly(loop)
        }

        @Test("binding in a missing directory fails with ENOENT")
        func missingDirectory() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let loop = try Loop()
            let error = #expect(throws: UVError.self) {
                try PipeListener(loop: loop, path: directory.file("absent/control.sock"), mode: 0o600) { $0.close() }
            }
            #expect(error?.code == UV_ENOENT.rawValue)
            expectClosesCleanly(loop)
        }
    }
}
