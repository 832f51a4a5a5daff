// A client's clause can make SQLite hold many values of the length limit at once: constant
// calls are computed once and kept for the whole statement, every argument of a call and
// every term of an ORDER BY is held until the call or the record, and `x || ''` makes a new
// value without a function call. SQLite's limits bound the size of one value, not how many a
// statement holds (62 printf values of 16 MB took a daemon past 1 GB), and its heap limits are
// process-wide: past them the writer's commits would fail too.
// So SQLite's allocator is wrapped, once, before SQLite initializes itself: every block gets a
// 16-byte header naming the account it was charged to, if any. A query thread names its
// connection's account while it compiles and steps a client's statement; an allocation that
// would take the account past its limit fails, and SQLite ends the statement with
// SQLITE_NOMEM. Each query starts a new generation of its account, so a block is counted only
// by the query that made it: pages cached and statements kept by earlier queries are not
// (they have bounds of their own). Other threads, and the engine's own statements, pay only
// the header and a thread-local read.

#include "query_memory.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

struct AssetdQueryMemory {
    long long limit;
    _Atomic long long bytes;
    _Atomic long long peak;
    _Atomic uint32_t generation;
    _Atomic int refused;
    AssetdQueryMemory *next;     // on the free list
};

typedef struct Header {
    AssetdQueryMemory *account;  // NULL: charged to none
    uint32_t generation;
    uint32_t size;               // bytes asked for, less this header (SQLite asks for < 2^31)
} Header;

// Keeps a block as aligned as the allocator below gives it: SQLite's default one, as built
// here, puts its own 8-byte size before each block, so blocks are 8-byte aligned, 24 bytes
// over malloc's.
_Static_assert(sizeof(Header) == 16, "a multiple of 16 bytes");

static sqlite3_mem_methods real;
static int installed;
static _Thread_local AssetdQueryMemory *current;

// Accounts are reused, never freed: a block can outlive its connection (something SQLite made
// lazily during a query and keeps), and its header must still point to an account.
static AssetdQueryMemory *freeList;
static pthread_mutex_t freeLock = PTHREAD_MUTEX_INITIALIZER;

static Header *headerOf(void *p) { return (Header *)p - 1; }

/// Whether `h`'s bytes are the running query's of its account.
static int counted(const Header *h) {
    return h->account && h->generation == atomic_load_explicit(&h->account->generation, memory_order_relaxed);
}

/// Charges `n` more bytes to `a`, or refuses them past its limit.
static int charge(AssetdQueryMemory *a, long long n) {
    long long now = atomic_fetch_add_explicit(&a->bytes, n, memory_order_relaxed) + n;
    if (now > a->limit) {
        atomic_fetch_sub_explicit(&a->bytes, n, memory_order_relaxed);
        atomic_store_explicit(&a->refused, 1, memory_order_relaxed);
        return 0;
    }
    long long peak = atomic_load_explicit(&a->peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&a->peak, &peak, now, memory_order_relaxed,
                                                                memory_order_relaxed)) {
    }
    return 1;
}

static void *countedMalloc(int n) {
    AssetdQueryMemory *a = current;
    if (a && !charge(a, n)) return NULL;
    Header *h = real.xMalloc(n + (int)sizeof(Header));
    if (!h) {
        if (a) atomic_fetch_sub_explicit(&a->bytes, n, memory_order_relaxed);
        return NULL;
    }
    h->account = a;
    h->generation = a ? atomic_load_explicit(&a->generation, memory_order_relaxed) : 0;
    h->size = (uint32_t)n;
    return h + 1;
}

static void countedFree(void *p) {
    if (!p) return;
    Header *h = headerOf(p);
    if (counted(h)) atomic_fetch_sub_explicit(&h->account->bytes, h->size, memory_order_relaxed);
    real.xFree(h);
}

// A block that shrinks is never refused (SQLite assumes shrinking works, and frees or keeps
// using the block as it was) and stays charged where it was, less what it gave back. A block
// that grows is charged to the running query: by the difference if it is already this query's
// (the old and new sizes together could pass the bound for a block that fits), in full
// otherwise.
static void *countedRealloc(void *p, int n) {
    Header *h = headerOf(p);
    AssetdQueryMemory *a = current;
    long long old = counted(h) ? h->size : 0;
    AssetdQueryMemory *oldAccount = old ? h->account : NULL;
    if ((uint32_t)n <= h->size) {
        AssetdQueryMemory *account = h->account;
        uint32_t generation = h->generation;
        Header *g = real.xRealloc(h, n + (int)sizeof(Header));
        if (!g) return NULL;
        if (oldAccount) atomic_fetch_sub_explicit(&oldAccount->bytes, old - n, memory_order_relaxed);
        g->account = account;
        g->generation = generation;
        g->size = (uint32_t)n;
        return g + 1;
    }
    long long charged = a && a == oldAccount ? n - old : n;
    if (a && !charge(a, charged)) return NULL;
    Header *g = real.xRealloc(h, n + (int)sizeof(Header));
    if (!g) {
        if (a) atomic_fetch_sub_explicit(&a->bytes, charged, memory_order_relaxed);
        return NULL;
    }
    if (oldAccount && oldAccount != a) atomic_fetch_sub_explicit(&oldAccount->bytes, old, memory_order_relaxed);
    g->account = a;
    g->generation = a ? atomic_load_explicit(&a->generation, memory_order_relaxed) : 0;
    g->size = (uint32_t)n;
    return g + 1;
}

static int countedSize(void *p) { return p ? (int)headerOf(p)->size : 0; }

static int countedRoundup(int n) { return real.xRoundup(n + (int)sizeof(Header)) - (int)sizeof(Header); }

// SQLite calls xInit only for the allocator it initializes itself with: set here, `installed`
// also says nothing replaced the counting allocator between the constructor and then.
static int countedInit(void *data) {
    int rc = real.xInit(data);
    if (rc == SQLITE_OK) installed = 1;
    return rc;
}

static void countedShutdown(void *data) { real.xShutdown(data); }

// Defined by assetbench only (nonzero: leave SQLite's allocator as it is), so that one build
// measures its work with the wrapper and without; elsewhere it is absent and the wrapper is
// always installed.
extern int assetbench_plain_allocator(void) __attribute__((weak));

// Before main, so before anything opens a database (SQLite refuses a new allocator once it has
// initialized itself), and before the guard on side files (side_files.c), which initializes it.
__attribute__((constructor(101))) static void installCountingAllocator(void) {
    if (assetbench_plain_allocator && assetbench_plain_allocator()) return;
    if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &real) != SQLITE_OK) return;
    static sqlite3_mem_methods counting;
    counting = real;
    counting.xMalloc = countedMalloc;
    counting.xFree = countedFree;
    counting.xRealloc = countedRealloc;
    counting.xSize = countedSize;
    counting.xRoundup = countedRoundup;
    counting.xInit = countedInit;
    counting.xShutdown = countedShutdown;
    sqlite3_config(SQLITE_CONFIG_MALLOC, &counting);
}

int assetd_query_memory_installed(void) { return installed; }

AssetdQueryMemory *assetd_query_memory_create(long long limit) {
    pthread_mutex_lock(&freeLock);
    AssetdQueryMemory *a = freeList;
    if (a) freeList = a->next;
    pthread_mutex_unlock(&freeLock);
    if (!a) {
        a = calloc(1, sizeof *a);
        if (!a) return NULL;
    }
    // A new generation: blocks its last owner left charged are not counted.
    atomic_fetch_add(&a->generation, 1);
    a->limit = limit;
    atomic_store(&a->bytes, 0);
    atomic_store(&a->peak, 0);
    atomic_store(&a->refused, 0);
    a->next = NULL;
    return a;
}

void assetd_query_memory_destroy(AssetdQueryMemory *account) {
    if (!account) return;
    atomic_fetch_add(&account->generation, 1);
    pthread_mutex_lock(&freeLock);
    account->next = freeList;
    freeList = account;
    pthread_mutex_unlock(&freeLock);
}

AssetdQueryMemory *assetd_query_memory_begin(AssetdQueryMemory *account) {
    if (account) {
        atomic_fetch_add(&account->generation, 1);
        atomic_store(&account->bytes, 0);
        atomic_store(&account->peak, 0);
    }
    return assetd_query_memory_enter(account);
}

AssetdQueryMemory *assetd_query_memory_enter(AssetdQueryMemory *account) {
    AssetdQueryMemory *previous = current;
    current = account;
    return previous;
}

int assetd_query_memory_take_refused(AssetdQueryMemory *account) {
    return account ? atomic_exchange(&account->refused, 0) : 0;
}

long long assetd_query_memory_bytes(const AssetdQueryMemory *account) {
    return account ? atomic_load(&account->bytes) : 0;
}

long long assetd_query_memory_peak(const AssetdQueryMemory *account) {
    return account ? atomic_load(&account->peak) : 0;
}
