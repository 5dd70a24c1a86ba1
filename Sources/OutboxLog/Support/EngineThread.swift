import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts the engine's own threads (writer, readers, compaction, recovery
/// read-ahead), each named at the operating-system level, so that a
/// debugger, `gdb`'s thread list or a crash report says whose it is.
///
/// Foundation's `Thread.name` does not reliably reach the system's thread
/// name on Linux (a thread started from the cooperative pool keeps the
/// pool's name), so the thread names itself with `pthread_setname_np`.
/// Linux keeps 15 bytes of a name: the engine's names are short.
enum EngineThread {
    static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            nameCurrentThread(name)
            body()
        }
        thread.start()
    }

    private static func nameCurrentThread(_ name: String) {
        let short = String(decoding: name.utf8.prefix(15), as: UTF8.self)
        #if canImport(Darwin)
        _ = pthread_setname_np(short)
        #else
        // Not in the Glibc module map (a GNU extension): looked up once.
        if let setName = systemSetName { _ = short.withCString { setName(pthread_self(), $0) } }
        #endif
    }

    #if !canImport(Darwin)
    private typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> CInt
    private static let systemSetName: SetName? = dlsym(nil, "pthread_setname_np").map { unsafeBitCast($0, to: SetName.self) }
    #endif
}
