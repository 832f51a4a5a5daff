// Streams over a real Unix socket in a temp directory: credentials, a 1 MiB echo, end of
// stream, errors from a vanished peer, and the close rules. SIGPIPE is ignored here exactly
// as the daemon must ignore it: libuv writes with write(2), which raises it on a dead peer.

import CUV
import EventLoop
import Glibc
import Testing

extension EventLoopTests {
    @Suite struct PipeStreamTests {
        init() {
            signal(SIGPIPE, SIG_IGN)
        }

        @Test("a client connects and both sides see the other's pid, uid and gid")
        func peerCredentials() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let loop = try Loop()
            let path = directory.file("control.sock")
            let me = PeerCredentials(pid: getpid(), uid: getuid(), gid: getgid())
            var serverSaw: PeerCredentials?
            var clientSaw: PeerCredentials?
            var listener: PipeListener?
            listener = try PipeListener(loop: loop, path: path, mode: 0o600) { stream in
                serverSaw = stream.peerCredentials
                stream.close()
                listener?.close()
            }
            try PipeStream.connect(loop: loop, path: path) { result in
                switch result {
                case .success(let client):
                    clientSaw = client.peerCredentials
                    client.close()
                case .failure(let error):
                    Issue.record(error)
                }
            }
            runUntilIdle(loop)
            #expect(serverSaw == me)
            #expect(serverSaw?.uid == getuid())
            #expect(serverSaw?.pid == getpid())
            #expect(clientSaw == me)
            expectClosesCleanly(loop)
        }

        @Test("tryWrite writes what the kernel takes at once, never overtakes queued writes, and keeps order")
        func tryWriteKeepsOrder() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let loop = try Loop()
            let path = directory.file("try.sock")
            let big = pattern(count: 1 << 20)
            var received: [UInt8] = []
            var listener: PipeListener?
            listener = try PipeListener(loop: loop, path: path, mode: 0o600) { stream in
                listener?.close()
                do {
                    try stream.startReading({ bytes in received += bytes }, onEnd: { _ in stream.close() })
                } catch { Issue.record(error) }
            }
            var small = -1
            var whileQueued = -1
            var afterClose = -1
            try PipeStream.connect(loop: loop, path: path) { result in
                guard case .success(let client) = result else {
                    Issue.record("connect failed: \(result)")
                    return
                }
                small = Array("hello\n".utf8).withUnsafeBytes { client.tryWrite($0) }
                client.write(big)  // more than the socket buffer: part of it stays queued
                whileQueued = Array("late".utf8).withUnsafeBytes { client.tryWrite($0) }
                client.write(Array("tail".utf8)) { _ in client.shutdownAndClose() }
                client.close()
                afterClose = Array("x".utf8).withUnsafeBytes { client.tryWrite($0) }
            }
            runUntilIdle(loop)
            #expect(small == 6)
            #expect(whileQueued == 0)
            #expect(afterClose == 0)
            #expect(received.count <= 6 + big.count + 4)
            #expect(received.starts(with: Array("hello\n".utf8)))
            #expect(!received.contains(Array("late".utf8)))
            expectClosesCleanly(loop)
        }

        @Test("1 MiB echoes through the pipe in both directions, with the write queue observed")
        func echoOneMebibyte() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let loop = try Loop()
            let path = directory.file("echo.sock")
            let payload = pattern(count: 1 << 20)

            var serverReceived = 0
            var serverEnds: [UVError?] = []
            var serverLargestQueue = 0
            var listener: PipeListener?
            listener = try PipeListener(loop: loop, path: path, mode: 0o600) { stream in
                listener?.close()
                do {
                    try stream.startReading(
                        { bytes in
                            serverReceived += bytes.count
                            stream.write(Array(bytes)) { error in #expect(error == nil) }
                            serverLargestQueue = max(serverLargestQueue, stream.writeQueueSize)
                        },
                        onEnd: { error in
                            serverEnds.append(error)
                            stream.shutdownAndClose()  // flushes the echo still queued
                        })
                } catch { Issue.record(error) }
            }

            var received: [UInt8] = []
            var queuedAfterWrite = 0
            var queuedAtDone = -1
            var writesDone = 0
            var clientEnds = 0
            try PipeStream.connect(loop: loop, path: path) { result in
                guard case .success(let client) = result else {
                    Issue.record("connect failed: \(result)")
                    return
                }
                do {
                    try client.startReading(
                        { bytes in
                            received += bytes
                            if received.count >= payload.count { client.shutdownAndClose() }
                        },
                        onEnd: { _ in clientEnds += 1 })
                } catch { Issue.record(error) }
                client.write(payload) { error in
                    #expect(error == nil)
                    writesDone += 1
                    queuedAtDone = client.writeQueueSize
                }
                queuedAfterWrite = client.writeQueueSize
            }
            runUntilIdle(loop)
            #expect(serverReceived == payload.count)
            #expect(received.count == payload.count)
            #expect(received == payload)
            #expect(writesDone == 1)
            #expect(queuedAfterWrite > 0)  // 1 MiB exceeds the socket buffer, so libuv queued the rest
            #expect(queuedAfterWrite <= payload.count)
            #expect(queuedAtDone == 0)
            #expect(serverLargestQueue >= 0)
            #expect(serverEnds.count == 1)
            #expect(serverEnds.first.map { $0 == nil } == true)  // the client's shutdown is a clean end
            #expect(clientEnds == 0)  // shutdownAndClose stops reading, so onEnd does not run
            expectClosesCleanly(loop)
        }

        @Test("when the peer closes, onEnd runs with nil and no more data follows")
        func peerCloseEndsStream() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let loop = try Loop()
            let path = directory.file("control.sock")
            var chunks: [[UInt8]] = []
            var ends: [UVError?] = []
            var listener: PipeListener?
            listener = try PipeListener(loop: loop, path: path, mode: 0o600) { stream in
                listener?.close()
                do {
                    try stream.startReading(
                        { chunks.append(Array($0)) },
                        onEnd: { error in
                            ends.append(error)
                            stream.close()
                        })
                } catch { Issue.record(error) }
            }
            try PipeStream.connect(loop: loop, path: path) { result in
                guard case .success(let client) = result else {
                    Issue.record("connect failed")
                    return
                }
                client.write(Array("hello\n".utf8))
                client.close()  // a queued write is not flushed by close()
            }
            runUntilIdle(loop)
            #expect(ends.count == 1)
            #expect(ends.first.map { $0 == nil } == true)
            #expect(chunks.joined().count <= 6)
            expectClosesCleanly(loop)
        }

        @Test("shutdownAndClose flushes 1 MiB before the peer sees the end")
        func shutdownFlushes() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let loop = try Loop()
            let path = directory.file("control.sock")
            let payload = pattern(count: 1 << 20, seed: 7)
            var serverClosed = 0
            var listener: PipeListener?
            listener = try PipeListener(loop: loop, path: path, mode: 0o600) { stream in
                listener?.close()
                stream.write(payload)
                stream.shutdownAndClose { serverClosed += 1 }
                #expect(stream.isClosed)
            }
            var received: [UInt8] = []
            var ends: [UVError?] = []
            try PipeStream.connect(loop: loop, path: path) { result in
                guard case .success(let client) = result else {
                    Issue.record("connect failed")
                    return
                }
                do {
                    try client.startReading(
                        { received += $0 },
                        onEnd: { error in
                            ends.append(error)
                            client.close()
                        })
                } catch { Issue.record(error) }
            }
            runUntilIdle(loop)
            #expect(received == payload)
            #expect(ends.count == 1)
            #expect(ends.first.map { $0 == nil } == true)
            #expect(serverClosed == 1)
            expectClosesCleanly(loop)
        }

        @Test("writing to a peer that has gone yields an error in done, not a crash")
        func writeToClosedPeerFails() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let loop = try Loop()
            let path = directory.file("control.sock")
            var listener: PipeListener?
            listener = try PipeListener(loop: loop, path: path, mode: 0o600) { stream in
                listener?.close()
                stream.close()
            }
            var writeErrors: [UVError?] = []
            try PipeStream.connect(loop: loop, path: path) { result in
                guard case .success(let client) = result else {
                    Issue.record("connect failed")
                    return
                }
                do {
                    try client.startReading(
                        { _ in },
                        onEnd: { _ in
                            client.write(pattern(count: 256 << 10)) { error in
                                writeErrors.append(error)
                                client.close()
                            }
                        })
                } catch { Issue.record(error) }
            }
            runUntilIdle(loop)
            #expect(writeErrors.count == 1)
            let code = writeErrors.first??.code
            #expect(code == UV_EPIPE.rawValue || code == UV_ECONNRESET.rawValue)
            expectClosesCleanly(loop)
        }

        @Test("close cancels a pending write, refuses later ones at once, and is idempotent")
        func closeRules() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let loop = try Loop()
            let path = directory.file("control.sock")
            var listener: PipeListener?
            listener = try PipeListener(loop: loop, path: path, mode: 0o600) { stream in
                listener?.close()
                do {  // never echoes; closes when the client goes
                    try stream.startReading({ _ in }, onEnd: { _ in stream.close() })
                } catch { Issue.record(error) }
            }
            var pending: [UVError?] = []
            var late: [UVError?] = []
            var closes = 0
            try PipeStream.connect(loop: loop, path: path) { result in
                guard case .success(let client) = result else {
                    Issue.record("connect failed")
                    return
                }
                client.write(pattern(count: 2 << 20)) { pending.append($0) }
                #expect(client.writeQueueSize > 0)
                #expect(!client.isClosed)
                client.close { closes += 1 }
                client.close { closes += 1 }
                #expect(client.isClosed)
                client.write([1, 2, 3]) { late.append($0) }
                #expect(late.count == 1)  // at once, before write returns
                #expect(throws: UVError.self) { try client.startReading({ _ in }, onEnd: { _ in }) }
                client.stopReading()
                client.shutdownAndClose()
            }
            runUntilIdle(loop)
            #expect(pending.count == 1)
            #expect(pending.first??.code == UV_ECANCELED.rawValue)
            #expect(late.count == 1)
            #expect(late.first??.code == UV_ECANCELED.rawValue)
            #expect(closes == 2)
            expectClosesCleanly(loop)
        }

        @Test("starting to read twice replaces the closures, and reading pauses and resumes")
        func readingPausesAndResumes() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let loop = try Loop()
            let path = directory.file("control.sock")
            var log: [String] = []
            let resume = try Timer(loop: loop)
            var listener: PipeListener?
            listener = try PipeListener(loop: loop, path: path, mode: 0o600) { stream in
                listener?.close()
                do {
                    try stream.startReading({ _ in log.append("replaced closure ran") }, onEnd: { _ in })
                    try stream.startReading(
                        { bytes in
                            log.append("first: " + String(decoding: bytes, as: UTF8.self))
                            stream.stopReading()
                            stream.write(Array("ack".utf8))
                            do {
                                try resume.start(after: 0.02) {
                                    resume.close()
                                    do {
                                        try stream.startReading(
                                            { log.append("resumed: " + String(decoding: $0, as: UTF8.self)) },
                                            onEnd: { error in
                                                log.append("end \(error == nil)")
                                                stream.close()
                                            })
                                    } catch { Issue.record(error) }
                                }
                            } catch { Issue.record(error) }
                        },
                        onEnd: { _ in log.append("paused onEnd ran") })
                } catch { Issue.record(error) }
            }
            try PipeStream.connect(loop: loop, path: path) { result in
                guard case .success(let client) = result else {
                    Issue.record("connect failed")
                    return
                }
                client.write(Array("one".utf8))
                do {
                    try client.startReading(
                        { _ in
                            client.write(Array("two".utf8))
                            client.shutdownAndClose()
                        }, onEnd: { _ in })
                } catch { Issue.record(error) }
            }
            runUntilIdle(loop)
            #expect(log == ["first: one", "resumed: two", "end true"])
            expectClosesCleanly(loop)
        }

        @Test("connecting to a missing socket reports ENOENT in done")
        func connectToMissingSocket() throws {
            let directory = TemporaryDirectory()
            defer { directory.remove() }
            let loop = try Loop()
            var failures: [UVError] = []
            try PipeStream.connect(loop: loop, path: directory.file("absent.sock")) { result in
                switch result {
                case .success(let stream):
                    Issue.record("connected to nothing")
                    stream.close()
                case .failure(let error):
                    failures.append(error)
                }
            }
            runUntilIdle(loop)
            #expect(failures.map(\.code) == [UV_ENOENT.rawValue])
            #expect(failures.first?.call == "uv_pipe_connect")
            expectClosesCleanly(loop)
        }

        @Test("connecting to a path too long for sun_path throws before anything is created")
        func connectTooLong() throws {
            let loop = try Loop()
            let error = #expect(throws: UVError.self) {
                try PipeStream.connect(loop: loop, path: "/tmp/" + String(repeating: "x", count: 200)) { _ in
                    Issue.record("done must not run")
                }
            }
            #expect(error?.code == UV_ENAMETOOLONG.rawValue)
            #expect(loop.openHandleCount == 0)
            runUntilIdle(loop)
            expectClosesCleanly(loop)
        }
    }
}
