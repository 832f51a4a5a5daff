// The one way in from other threads: wakes from 8 threads coalesce into at least one
// callback, and draining a locked queue in the callback sees every item.

import EventLoop
import Foundation
import Testing

extension EventLoopTests {
    @Suite struct WakerTests {
        @Test("wakes from 8 threads coalesce and every queued item is drained")
        func wakesCoalesceAndQueueDrains() throws {
            let threads = 8
            let perThread = 1000
            let loop = try Loop()
            let loopThread = currentThread
            let queue = Locked<[Int]>([])
            var drained: [Int] = []
            var wakes = 0
            var offLoopWakes = 0
            var waker: Waker?
            waker = try Waker(loop: loop) {
                wakes += 1
                if currentThread != loopThread { offLoopWakes += 1 }
                drained += queue.withLock { items in
                    defer { items = [] }
                    return items
                }
                if drained.count == threads * perThread { waker?.close() }
            }
            let sender = waker!  // just created above
            for t in 0..<threads {
                Thread {
                    for i in 0..<perThread {
                        queue.withLock { $0.append(t * perThread + i) }
                        sender.wake()
                    }
                }.start()
            }
            runUntilIdle(loop, timeout: 30)
            #expect(drained.count == threads * perThread)
            #expect(Set(drained).count == threads * perThread)
            #expect(wakes >= 1)
            #expect(wakes <= threads * perThread)
            #expect(offLoopWakes == 0)
            sender.wake()  // ignored after close: must not touch freed memory
            expectClosesCleanly(loop)
        }

        @Test("an unref'd waker does not keep run() alive")
        func unrefDoesNotHoldLoop() throws {
            let loop = try Loop()
            var woken = 0
            let waker = try Waker(loop: loop) { woken += 1 }
            waker.unref()
            loop.run()
            #expect(woken == 0)
            waker.wake()
            let timer = try Timer(loop: loop)  // an unref'd handle alone does not make run() poll
            try timer.start(after: 0.01) { timer.close() }
            runUntilIdle(loop)
            #expect(woken == 1)
            waker.close()
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }
    }
}
