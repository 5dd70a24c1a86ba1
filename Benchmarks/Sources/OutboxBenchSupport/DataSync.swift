#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Makes a file's written data durable the way the raw baselines promise:
/// `fdatasync` on Linux, `F_FULLFSYNC` on Apple (where `fsync` leaves the data
/// in the drive's cache). Throws with the call's errno.
func syncData(_ descriptor: Int32) throws {
    #if canImport(Darwin)
    guard fcntl(descriptor, F_FULLFSYNC) == 0 else { throw BenchError("F_FULLFSYNC: errno \(errno)") }
    #else
    guard fdatasync(descriptor) == 0 else { throw BenchError("fdatasync: errno \(errno)") }
    #endif
}
