// assetd's log: swift-log's stream handler on standard error, each message and metadata value
// with its control characters escaped. Messages name clients' files, keys and owners, and a
// line end in one would start a log line of the client's choosing (under the unit, a journal
// entry of assetd's, its priority too with a leading `<N>`).

import JSON
import Logging

struct EscapingLogHandler: LogHandler {
    var inner: StreamLogHandler

    func log(event: LogEvent) {
        var escaped = event
        escaped.message = Logger.Message(stringLiteral: event.message.description.controlsEscaped)
        escaped.metadata = event.metadata?.mapValues { .string($0.description.controlsEscaped) }
        inner.log(event: escaped)
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }
}
