import Foundation

/// Searches every path and every file's bytes under a directory for text
/// that must not be there: the encrypted runs' leak check.
enum PlaintextScan {
    /// The first needle found, with where; `nil` if none is.
    static func first(of needles: [String], under root: String) -> String? {
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return "cannot list \(root)" }
        let patterns = needles.map { ($0, Data($0.utf8)) }
        while let relative = enumerator.nextObject() as? String {
            for (needle, _) in patterns where relative.contains(needle) { return "\"\(needle)\" in the path \(relative)" }
            var isDirectory: ObjCBool = false
            let path = root + "/" + relative
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                let bytes = FileManager.default.contents(atPath: path)
            else { continue }
            for (needle, pattern) in patterns where bytes.range(of: pattern) != nil {
                return "\"\(needle)\" in the file \(relative)"
            }
        }
        return nil
    }
}
