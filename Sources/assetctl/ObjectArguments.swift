// `COLLECTION KEY`, the two arguments that name one object (put, get, rm, touch, pin, unpin),
// and the commands that send just that to a method and print the commit (touch, pin, unpin).

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `COLLECTION KEY`.
struct ObjectArguments: ParsableArguments {
    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The key.") var key: String

    /// `{collection, key}`.
    var ref: JSONValue { CLIParams.ref(collection, key) }
}

/// A command that calls `method` with one object's `{collection, key}` and prints the commit.
protocol ObjectRefCommand: ParsableCommand {
    /// The method called.
    static var method: String { get }
    /// The root command (global options).
    var root: AssetCtl { get }
    /// The object.
    var object: ObjectArguments { get }
}

extension ObjectRefCommand {
    func run() throws {
        try root.show(Self.method, object.ref, Render.commit)
    }
}
