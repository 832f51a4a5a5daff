// Signals: a signal raised from a timer reaches its watcher on the loop thread; a signal
// libuv cannot watch fails at init and still leaves no handle behind.

import CUV
import EventLoop
import Glibc
import Testing

extension EventLoopTests {
    @Suite struct SignalWatcherTests {
        @Test("SIGUSR1 raised from a timer reaches the watcher")
        func signalReachesWatcher() throws {
            let loop = try Loop()
            var received = 0
            var watcher: SignalWatcher?
            let timer = try Timer(loop: loop)
            watcher = try SignalWatcher(loop: loop, signal: SIGUSR1) {
                received += 1
                watcher?.close()
                timer.close()
            }
            // The test runner's worker threads block most signals, and raise() targets this
            // thread, so unblock SIGUSR1 here for the test's duration.
            var usr1 = sigset_t()
            sigemptyset(&usr1)
            sigaddset(&usr1, SIGUSR1)
            var saved = sigset_t()
            pthread_sigmask(SIG_UNBLOCK, &usr1, &saved)
            defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
            try timer.start(after: 0.005) { raise(SIGUSR1) }
            runUntilIdle(loop)
            #expect(received == 1)
            expectClosesCleanly(loop)
        }

        @Test("an unref'd watcher does not keep run() alive")
        func unrefDoesNotHoldLoop() throws {
            let loop = try Loop()
            let watcher = try SignalWatcher(loop: loop, signal: SIGUSR2) {}
            watcher.unref()
            loop.run()
            #expect(loop.openHandleCount == 1)
            watcher.close()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }

        @Test("watching SIGKILL fails with EINVAL and leaves no handle")
        func uncatchableSignalFails() throws {
            let loop = try Loop()
            let error = #expect(throws: UVError.self) { try SignalWatcher(loop: loop, signal: SIGKILL) {} }
            #expect(error?.code == UV_EINVAL.rawValue)
            #expect(error?.call == "uv_signal_start")
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }
    }
}
