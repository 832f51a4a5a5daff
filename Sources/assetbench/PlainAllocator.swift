// An env switch for the cost of the allocator that counts a query's memory (query_memory.c):
// with ASSETBENCH_PLAIN_ALLOCATOR set, SQLite keeps its own, so one build measures a workload
// with the wrapper and without (docs/PERFORMANCE.md, Index queries, 0.16 round). The store then
// refuses its query connections, so `Bench.run` stops after the puts.

import Glibc

/// Called by query_memory.c's constructor, before main; nonzero leaves SQLite's allocator as it is.
@_cdecl("assetbench_plain_allocator")
public func assetbenchPlainAllocator() -> Int32 { getenv("ASSETBENCH_PLAIN_ALLOCATOR") != nil ? 1 : 0 }
