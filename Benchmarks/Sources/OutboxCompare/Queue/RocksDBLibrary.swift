#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

extension RocksDBQueue {
    /// Where a RocksDB C call leaves its error: a `char*` it sets to a
    /// malloc'ed message on failure and leaves NULL on success.
    typealias ErrorSlot = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

    /// An error from RocksDB (its own message), or from finding or using it.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// `load()`'s answer, looked up once (on first use) for all the rows.
    static let library: Library? = load()

    /// RocksDB on this machine if its shared library is installed, else nil
    /// (the caller leaves RocksDB's rows out, as it does `db_bench`'s). A
    /// library that opens but lacks a function this queue calls is noted on
    /// standard error, so that the missing rows are explained.
    static func load() -> Library? {
        do {
            return try Library.find()
        } catch {
            FileHandle.standardError.write(Data("RocksDB queue rows left out: \(error)\n".utf8))
            return nil
        }
    }

    /// RocksDB's C API (`rocksdb/c.h`), looked up at run time with `dlopen`
    /// rather than linked, so that the benchmarks build on machines without
    /// RocksDB (Debian's `librocksdb7.8` ships no headers and no
    /// `librocksdb.so` link to build against). Opaque C handles are
    /// `OpaquePointer`s; `size_t` is `Int`; C booleans are `UInt8`.
    struct Library: Sendable {
        typealias Handle = OpaquePointer?
        typealias Bytes = UnsafePointer<CChar>?

        /// What was opened: a file name the loader searched for, or a path.
        let path: String
        /// The version in the library's file name ("7.8.3"), or "" if unknown.
        let version: String

        let optionsCreate: @convention(c) () -> Handle
        let optionsSetCreateIfMissing: @convention(c) (Handle, UInt8) -> Void
        let optionsDestroy: @convention(c) (Handle) -> Void
        let open: @convention(c) (Handle, Bytes, ErrorSlot?) -> Handle
        let close: @convention(c) (Handle) -> Void
        let writeOptionsCreate: @convention(c) () -> Handle
        let writeOptionsSetSync: @convention(c) (Handle, UInt8) -> Void
        let writeOptionsDestroy: @convention(c) (Handle) -> Void
        let readOptionsCreate: @convention(c) () -> Handle
        let readOptionsDestroy: @convention(c) (Handle) -> Void
        let put: @convention(c) (Handle, Handle, Bytes, Int, Bytes, Int, ErrorSlot?) -> Void
        let write: @convention(c) (Handle, Handle, Handle, ErrorSlot?) -> Void
        let batchCreate: @convention(c) () -> Handle
        let batchPut: @convention(c) (Handle, Bytes, Int, Bytes, Int) -> Void
        let batchDeleteRange: @convention(c) (Handle, Bytes, Int, Bytes, Int) -> Void
        let batchDestroy: @convention(c) (Handle) -> Void
        let createIterator: @convention(c) (Handle, Handle) -> Handle
        let iteratorSeek: @convention(c) (Handle, Bytes, Int) -> Void
        let iteratorValid: @convention(c) (Handle) -> UInt8
        let iteratorKey: @convention(c) (Handle, UnsafeMutablePointer<Int>?) -> Bytes
        let iteratorValue: @convention(c) (Handle, UnsafeMutablePointer<Int>?) -> Bytes
        let iteratorNext: @convention(c) (Handle) -> Void
        let iteratorError: @convention(c) (Handle, ErrorSlot?) -> Void
        let iteratorDestroy: @convention(c) (Handle) -> Void
        /// `rocksdb_free`: error messages are freed by the allocator that made them.
        let release: @convention(c) (UnsafeMutableRawPointer?) -> Void

        /// The first candidate that opens; nil if none does. Throws (naming
        /// the function) if one opens but lacks a function and no later one
        /// is complete.
        static func find() throws -> Library? {
            var firstFailure: (any Error)?
            for candidate in candidates {
                do {
                    if let library = try Library(path: candidate) { return library }
                } catch {
                    firstFailure = firstFailure ?? error
                }
            }
            if let firstFailure { throw firstFailure }
            return nil
        }

        /// Where RocksDB may be: the unversioned name the loader searches
        /// for, then the versioned files distributions install (Debian has
        /// only `librocksdb.so.7.8` and `.7.8.3`), shortest name first.
        static var candidates: [String] {
            #if canImport(Darwin)
            return ["librocksdb.dylib", "/opt/homebrew/lib/librocksdb.dylib"]
            #else
            let directories = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/usr/local/lib"]
            let versioned = directories.flatMap { directory in
                ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
                    .filter { $0.hasPrefix("librocksdb.so.") }
                    .map { (name: $0, path: directory + "/" + $0) }
            }
            // Stable: directories keep their order among names of one length.
            return ["librocksdb.so"] + versioned.sorted { $0.name.count < $1.name.count }.map(\.path)
            #endif
        }

        /// The library at `path`; nil if the loader cannot open it. Throws
        /// if it lacks one of the functions, naming it.
        init?(path: String) throws {
            guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else { return nil }
            var complete = false
            // Incomplete: give the handle back. Complete: keep it for the
            // process's life (the function pointers point into it).
            defer { if !complete { dlclose(handle) } }
            func symbol<Function>(_ name: String) throws -> Function {
                guard let pointer = dlsym(handle, name) else { throw Failure(description: "\(path) has no \(name)") }
                return unsafeBitCast(pointer, to: Function.self)
            }
            self.path = path
            let file = path.hasPrefix("/") ? URL(fileURLWithPath: path).resolvingSymlinksInPath().lastPathComponent : ""
            version = file.range(of: ".so.").map { String(file[$0.upperBound...]) } ?? ""
            optionsCreate = try symbol("rocksdb_options_create")
            optionsSetCreateIfMissing = try symbol("rocksdb_options_set_create_if_missing")
            optionsDestroy = try symbol("rocksdb_options_destroy")
            open = try symbol("rocksdb_open")
            close = try symbol("rocksdb_close")
            writeOptionsCreate = try symbol("rocksdb_writeoptions_create")
            writeOptionsSetSync = try symbol("rocksdb_writeoptions_set_sync")
            writeOptionsDestroy = try symbol("rocksdb_writeoptions_destroy")
            readOptionsCreate = try symbol("rocksdb_readoptions_create")
            readOptionsDestroy = try symbol("rocksdb_readoptions_destroy")
            put = try symbol("rocksdb_put")
            write = try symbol("rocksdb_write")
            batchCreate = try symbol("rocksdb_writebatch_create")
            batchPut = try symbol("rocksdb_writebatch_put")
            batchDeleteRange = try symbol("rocksdb_writebatch_delete_range")
            batchDestroy = try symbol("rocksdb_writebatch_destroy")
            createIterator = try symbol("rocksdb_create_iterator")
            iteratorSeek = try symbol("rocksdb_iter_seek")
            iteratorValid = try symbol("rocksdb_iter_valid")
            iteratorKey = try symbol("rocksdb_iter_key")
            iteratorValue = try symbol("rocksdb_iter_value")
            iteratorNext = try symbol("rocksdb_iter_next")
            iteratorError = try symbol("rocksdb_iter_get_error")
            iteratorDestroy = try symbol("rocksdb_iter_destroy")
            release = try symbol("rocksdb_free")
            complete = true
        }

        /// Runs a C call with an error slot; if RocksDB put a message in it,
        /// frees it and throws it, prefixed with what was being done.
        func checked<Result>(_ what: String, _ call: (ErrorSlot) -> Result) throws -> Result {
            var message: UnsafeMutablePointer<CChar>?
            let result = withUnsafeMutablePointer(to: &message) { call($0) }
            guard let message else { return result }
            defer { release(message) }
            throw Failure(description: "RocksDB \(what): \(String(cString: message))")
        }

        /// A C object from one of the `…_create` calls, which allocate and
        /// do not fail; a nil is turned into an error all the same.
        func made(_ what: String, _ create: () -> Handle) throws -> OpaquePointer {
            guard let object = create() else { throw Failure(description: "RocksDB could not create \(what)") }
            return object
        }
    }
}
