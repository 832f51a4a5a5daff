// The [control] limits of assetd.toml(5): read with their types and ranges, defaults kept,
// errors naming the key.

import AssetStore
import Foundation
import Testing
@testable import AssetDaemon
@testable import AssetService

@Suite struct ControlLimitsConfigTests {
    func parse(_ text: String) throws(ConfigError) -> DaemonConfig {
        let defaults = DaemonConfig.embeddedDefaults(uid: 1000, environment: ["HOME": "/home/u"])
        return try ConfigParser(file: "/etc/assetd/test.toml", text: text).parse(defaults: defaults)
    }

    @Test("max_request_bytes past connection_input_bytes less 128 is warned of, the defaults not")
    func requestOverInputBoundWarns() throws {
        #expect(try parse("").limitWarnings.isEmpty)
        #expect(try parse("[control]\nmax_request_bytes = \"8MiB\"").limitWarnings.count == 1)
        let w = try parse("[control]\nmax_request_bytes = 65536\nconnection_input_bytes = 65600").limitWarnings
        #expect(w.count == 1 && w[0].contains("request_too_large"), "\(w)")
    }

    @Test("the control limits are read with their units, and left out they keep their defaults")
    func limitsRead() throws {
        #expect(try parse("").limits == ControlLimits())
        let c = try parse(
            """
            [control]
            query_threads = 3
            query_time_limit = "2m"
            max_reply_bytes = "1MiB"
            query_temp_bytes = "32MiB"
            connection_input_bytes = 65536
            connection_output_bytes = "2MiB"
            total_buffer_bytes = "64MiB"
            admin_reserved_connections = 4
            max_connections_per_uid = 10
            max_watchers_per_uid = 3
            max_lease_entries_per_connection = 100
            total_lease_entries = 1000
            max_cascade_objects = 500
            """)
        #expect(c.limits.queryThreads == 3 && c.limits.queryTimeLimit == 120)
        #expect(c.limits.maxReplyBytes == 1 << 20 && c.limits.connectionInputBytes == 65536)
        #expect(c.limits.connectionOutputBytes == 2 << 20 && c.limits.totalBufferBytes == 64 << 20)
        #expect(c.limits.adminReservedConnections == 4 && c.limits.maxConnectionsPerUID == 10)
        #expect(c.limits.maxWatchersPerUID == 3 && ControlLimits().maxWatchersPerUID == 16)
        #expect(c.summary.contains("control.max_watchers_per_uid = 3"))
        #expect(c.limits.leaseBounds == LeaseBounds(perHolder: 100, total: 1000))
        #expect(ControlLimits().leaseBounds == LeaseBounds(perHolder: 4096, total: 65_536))
        #expect(c.summary.contains("control.total_lease_entries = 1000"))
        #expect(c.storeConfiguration().queryTimeLimit == 120 && c.storeConfiguration().queryLengthLimit == 1 << 20)
        #expect(c.summary.contains("control.max_reply_bytes = 1048576"))
        #expect(c.storeConfiguration().queryTempLimit == 32 << 20 && ControlLimits().queryTempBytes == 256 << 20)
        #expect(c.summary.contains("control.query_temp_bytes = 33554432"))
        #expect(c.limits.cascadeLimit == 500 && c.summary.contains("control.max_cascade_objects = 500"))
    }

    @Test("max_cascade_objects defaults to 10000, and 0 sets no bound")
    func cascadeBound() throws {
        #expect(ControlLimits().cascadeLimit == 10_000)
        #expect(try parse("").summary.contains("control.max_cascade_objects = 10000"))
        #expect(try parse("[control]\nmax_cascade_objects = 0\n").limits.cascadeLimit == nil)
    }

    static let errors: [(String, String)] = [
        ("[control]\nquery_threads = 0\n", "control.query_threads"),
        ("[control]\nquery_time_limit = \"0s\"\n", "control.query_time_limit"),
        ("[control]\nmax_reply_bytes = \"lots\"\n", "control.max_reply_bytes"),
        ("[control]\nconnection_input_bytes = 10\n", "control.connection_input_bytes"),
        ("[control]\nmax_connections = 4\nadmin_reserved_connections = 4\n", "control.admin_reserved_connections"),
        ("[control]\nmax_connections_per_uid = 0\n", "control.max_connections_per_uid"),
        ("[control]\nmax_watchers_per_uid = 0\n", "control.max_watchers_per_uid"),
        ("[control]\nmax_lease_entries_per_connection = 0\n", "control.max_lease_entries_per_connection"),
        ("[control]\nmax_lease_entries_per_connection = \"4k\"\n", "control.max_lease_entries_per_connection"),
        ("[control]\ntotal_lease_entries = -1\n", "control.total_lease_entries"),
        ("[control]\nmax_cascade_objects = -1\n", "control.max_cascade_objects"),
        ("[control]\nmax_cascade_objects = \"lots\"\n", "control.max_cascade_objects"),
        (
            "[control]\nmax_lease_entries_per_connection = 2000\ntotal_lease_entries = 1000\n",
            "control.total_lease_entries"
        ),
    ]

    @Test("a lease bound set alone moves the other's default to fit it")
    func leaseDefaultsGiveWay() throws {
        #expect(try parse("[control]\ntotal_lease_entries = 1000\n").limits.leaseBounds.perHolder == 1000)
        let raised = try parse("[control]\nmax_lease_entries_per_connection = 100000000\n").limits
        #expect(raised.leaseBounds == LeaseBounds(perHolder: 100_000_000, total: 100_000_000))
    }

    @Test("a bad control limit names its key", arguments: errors)
    func badLimit(text: String, key: String) {
        do {
            _ = try parse(text)
            Issue.record("accepted:\n\(text)")
        } catch {
            #expect(error.key == key, "\(error)")
        }
    }
}
