// Timers: fire once, repeat until stopped or closed from inside the callback, stay quiet
// when stopped, do not hold the loop when unref'd; plus the Loop's own contract (EBUSY,
// idempotent close, runOnce).

import CUV
import EventLoop
import Testing

extension EventLoopTests {
    @Suite struct TimerTests {
        @Test("a timer fires once")
        func firesOnce() throws {
            let loop = try Loop()
            let timer = try Timer(loop: loop)
            var fired = 0
            try timer.start(after: 0.005) { fired += 1 }
            runUntilIdle(loop)
            #expect(fired == 1)
            timer.close()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }

        @Test("a repeating timer fires until it is stopped")
        func repeatsUntilStopped() throws {
            let loop = try Loop()
            let timer = try Timer(loop: loop)
            var fired = 0
            try timer.start(after: 0, repeating: 0.001) {
                fired += 1
                if fired == 5 { timer.stop() }
            }
            runUntilIdle(loop)
            #expect(fired == 5)
            timer.close()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }

        @Test("closing a repeating timer inside its callback ends it")
        func closesInsideCallback() throws {
            let loop = try Loop()
            let timer = try Timer(loop: loop)
            var fired = 0
            var closed = 0
            try timer.start(after: 0, repeating: 0.001) {
                fired += 1
                if fired == 3 { timer.close { closed += 1 } }
            }
            runUntilIdle(loop)
            #expect(fired == 3)
            #expect(closed == 1)
            expectClosesCleanly(loop)
        }

        @Test("a stopped timer never fires")
        func stoppedNeverFires() throws {
            let loop = try Loop()
            let timer = try Timer(loop: loop)
            var fired = 0
            try timer.start(after: 0.001) { fired += 1 }
            timer.stop()
            runUntilIdle(loop)
            #expect(fired == 0)
            timer.close()
            timer.stop()  // a no-op once closing
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }

        @Test("an unref'd timer does not keep run() alive")
        func unrefDoesNotHoldLoop() throws {
            let loop = try Loop()
            let background = try Timer(loop: loop)
            let foreground = try Timer(loop: loop)
            var backgroundFired = 0
            var foregroundFired = 0
            try background.start(after: 30) { backgroundFired += 1 }
            background.unref()
            try foreground.start(after: 0.005) { foregroundFired += 1 }
            let started = loop.now
            loop.run()
            #expect(foregroundFired == 1)
            #expect(backgroundFired == 0)
            #expect(loop.now - started < 5_000)
            #expect(loop.openHandleCount == 2)
            background.close()
            foreground.close()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }

        @Test("close is idempotent and every onClosed runs once")
        func closeIsIdempotent() throws {
            let loop = try Loop()
            let timer = try Timer(loop: loop)
            var calls: [String] = []
            timer.close { calls.append("first") }
            timer.close { calls.append("second") }
            #expect(loop.openHandleCount == 1)
            runUntilIdle(loop)
            #expect(calls == ["first", "second"])
            timer.close { calls.append("after") }
            timer.close()
            #expect(calls == ["first", "second", "after"])
            expectClosesCleanly(loop)
        }

        @Test("closing a loop with an open handle throws EBUSY, then succeeds once it is closed")
        func loopCloseWithOpenHandleIsBusy() throws {
            let loop = try Loop()
            let timer = try Timer(loop: loop)
            #expect(loop.openHandleCount == 1)
            let error = #expect(throws: UVError.self) { try loop.close() }
            #expect(error?.code == UV_EBUSY.rawValue)
            #expect(error?.name == "EBUSY")
            #expect(error?.description == "uv_loop_close: EBUSY (resource busy or locked)")
            if let error { #expect(UVError.Code.busy ~= error) }
            timer.close()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
            #expect(throws: Never.self) { try loop.close() }  // idempotent once closed
        }

        @Test("runOnce reports pending work until the last timer has fired")
        func runOnceReportsPendingWork() throws {
            let loop = try Loop()
            let timer = try Timer(loop: loop)
            var fired = 0
            try timer.start(after: 0.002) { fired += 1 }
            #expect(loop.runOnce(wait: false) == true)
            var iterations = 0
            while loop.runOnce(wait: true) { iterations += 1; if iterations > 1000 { break } }
            #expect(fired == 1)
            timer.close()
            #expect(loop.runOnce(wait: true) == false)  // the close callback runs; nothing remains
            expectClosesCleanly(loop)
        }

        @Test("closeAllHandles closes every handle the module created")
        func closeAllHandles() throws {
            let loop = try Loop()
            let first = try Timer(loop: loop)
            let second = try Timer(loop: loop)
            try second.start(after: 60) {}
            let waker = try Waker(loop: loop) {}
            _ = (first, waker)
            #expect(loop.openHandleCount == 3)
            loop.closeAllHandles()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }
    }
}
