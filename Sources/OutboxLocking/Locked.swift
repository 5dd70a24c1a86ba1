#if canImport(os)
import os
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value guarded by a lock: the one lock type of this package.
///
/// Why not the standard library's `Synchronization.Mutex`:
/// - it needs iOS 18 / macOS 15, and this package supports iOS 16 / macOS 13;
/// - on Linux it hands the lock over through a raw `futex` call that
///   ThreadSanitizer does not intercept, so every contended `withLock` looks
///   like a data race and TSan is useless as a check (Scripts/sanitize.sh).
///
/// This type uses the platform's own lock — `os_unfair_lock` on Apple
/// platforms, a `pthread_mutex_t` elsewhere — both of which the sanitizers
/// understand. The lock is not recursive: calling `withLock` again from inside
/// `body` on the same value deadlocks (an error-checking mutex traps on it in
/// debug builds on Linux).
///
/// The value can only be reached inside ``withLock(_:)``; the
/// `sending` annotations are the same as `Mutex`'s, so a non-`Sendable`
/// value can be guarded without being shared unsafely.
///
/// `public`, not `package`, only so that ``withLock(_:)`` is specialized and
/// inlined in the modules that use it: Swift 6.3 does not specialize an
/// `@inlinable package` generic in another module, and every lock taken in
/// the store and the engine went through the generic function (703 call
/// sites in the benchmark binary). `OutboxLocking` is not a product of the
/// package and not documented API; SwiftPM would let an app import it as a
/// module of a product's dependencies, but nothing promises it stays.
public final class Locked<Value>: @unchecked Sendable {
    #if canImport(os)
    @usableFromInline let lock: UnsafeMutablePointer<os_unfair_lock_s>
    #else
    @usableFromInline let lock: UnsafeMutablePointer<pthread_mutex_t>
    #endif
    @usableFromInline var value: Value

    public init(_ initialValue: sending Value) {
        value = initialValue
        #if canImport(os)
        lock = .allocate(capacity: 1)
        lock.initialize(to: os_unfair_lock_s())
        #else
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        #if DEBUG
        pthread_mutexattr_settype(&attributes, CInt(PTHREAD_MUTEX_ERRORCHECK))
        #endif
        let status = pthread_mutex_init(lock, &attributes)
        pthread_mutexattr_destroy(&attributes)
        precondition(status == 0, "pthread_mutex_init failed with \(status)")
        #endif
    }

    deinit {
        #if !canImport(os)
        pthread_mutex_destroy(lock)
        #endif
        lock.deinitialize(count: 1)
        lock.deallocate()
    }

    /// Runs `body` with exclusive access to the value and returns its result.
    ///
    /// Keep `body` short and free of blocking calls and `await`: every other
    /// thread that wants the value waits for it.
    @inlinable
    public func withLock<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        acquire()
        defer { release() }
        return try body(&value)
    }

    @inlinable
    func acquire() {
        #if canImport(os)
        os_unfair_lock_lock(lock)
        #else
        let status = pthread_mutex_lock(lock)
        precondition(status == 0, "pthread_mutex_lock failed with \(status)")
        #endif
    }

    @inlinable
    func release() {
        #if canImport(os)
        os_unfair_lock_unlock(lock)
        #else
        let status = pthread_mutex_unlock(lock)
        precondition(status == 0, "pthread_mutex_unlock failed with \(status)")
        #endif
    }
}
