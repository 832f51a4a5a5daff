// A value handed from a worker thread to the loop.

/// Written on a pool thread, read on the loop thread after libuv's `done`, which orders the two.
final class Box<T>: @unchecked Sendable {
    var value: T?
}
