import OutboxLog
import SystemPackage

/// Where each user's queue lives: `<root>/partitions/<escaped user>/`.
///
/// The user name is percent-escaped (everything but ASCII letters, digits,
/// `-`, `_` and `.`), so any string names exactly one directory and none can
/// climb out of the root.
enum PartitionDirectory {
    static func path(root: FilePath, partition: String) -> FilePath {
        root.appending("partitions").appending(escape(partition))
    }

    static func escape(_ partition: String) -> String {
        var result = ""
        for byte in partition.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                result.append(Character(Unicode.Scalar(byte)))
            case UInt8(ascii: ".") where !result.isEmpty:
                result.append(".")
            default:
                let digits = String(byte, radix: 16, uppercase: true)
                result += "%" + (digits.count == 1 ? "0" : "") + digits
            }
        }
        return result.isEmpty ? "%" : result
    }

    static func unescape(_ name: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = name.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return name == "%" ? "" : nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The partitions that have a directory under `root`.
    static func list(root: FilePath, fileSystem: any FileSystem) -> [String] {
        let names = (try? fileSystem.contentsOfDirectory(root.appending("partitions"))) ?? []
        return names.compactMap(unescape).sorted()
    }
}
