// Temp folders a test makes, removed with everything in them when the holder goes: a suite
// that keeps one as a stored property cleans up after each test.

import Foundation
import Glibc
import Synchronization

public final class TempFolders: Sendable {
    private let prefix: String
    private let made = Mutex<[String]>([])

    public init(prefix: String) { self.prefix = prefix }

    /// A new empty folder under /tmp, named `prefix` and six random characters.
    public func make() throws -> String {
        var template = Array("/tmp/\(prefix)XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let dir = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }  // mkdtemp wrote a C string
        made.withLock { $0.append(dir) }
        return dir
    }

    deinit {
        for dir in made.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: dir) }
    }
}
