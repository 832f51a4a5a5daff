// Preloaded into ThreadSanitizer runs only (scripts/test.sh --tsan): makes the contended path
// of Synchronization's Mutex visible to TSan. On Linux its fast path is an atomic compiled into
// our code, which TSan sees; the slow path (spinning, then a PI futex in which the kernel hands
// the lock over) is in libswiftSynchronization.so, which is not instrumented, so every
// critical section entered after a wait looked like a race. These wrappers add the
// acquire/release TSan missed and call the real functions; they change no locking.
// The TSan calls are weak so that uninstrumented processes (swift itself) can load this too.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>

__attribute__((weak)) void __tsan_acquire(void *addr);
__attribute__((weak)) void __tsan_release(void *addr);

// Swift's calling convention: `self` (the _MutexHandle, passed by address) goes in the
// swiftself register, which clang spells swift_context.
#define SWIFTCALL __attribute__((swiftcall))
#define SELF __attribute__((swift_context))

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

static SWIFTCALL void (*realLockSlow)(uint32_t, void *SELF);
static SWIFTCALL bool (*realTryLockSlow)(void *SELF);
static SWIFTCALL void (*realUnlockSlow)(void *SELF);

// Resolved once at load, before any thread runs. A process without Synchronization leaves
// them null and never calls the wrappers.
__attribute__((constructor)) static void resolve(void) {
    realLockSlow = dlsym(RTLD_NEXT, LOCK_SLOW);
    realTryLockSlow = dlsym(RTLD_NEXT, TRY_LOCK_SLOW);
    realUnlockSlow = dlsym(RTLD_NEXT, UNLOCK_SLOW);
}

SWIFTCALL void lockSlow(uint32_t thread, void *SELF handle) __asm__(LOCK_SLOW);
SWIFTCALL void lockSlow(uint32_t thread, void *SELF handle) {
    realLockSlow(thread, handle);
    if (__tsan_acquire) __tsan_acquire(handle);
}

SWIFTCALL bool tryLockSlow(void *SELF handle) __asm__(TRY_LOCK_SLOW);
SWIFTCALL bool tryLockSlow(void *SELF handle) {
    bool locked = realTryLockSlow(handle);
    if (locked && __tsan_acquire) __tsan_acquire(handle);
    return locked;
}

SWIFTCALL void unlockSlow(void *SELF handle) __asm__(UNLOCK_SLOW);
SWIFTCALL void unlockSlow(void *SELF handle) {
    if (__tsan_release) __tsan_release(handle);
    realUnlockSlow(handle);
}
