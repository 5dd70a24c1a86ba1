/// The vectors of damage: frames, headers, batches and the segment chain.
extension VectorCases {
    // MARK: Damaged frames

    static let frames: [VectorCase] = [
        VectorCase(name: "frame-crc", summary: "a record's CRC field changed (a later marker vouches for it: damage)") {
            flipping(try await standard(), key: "key-4", at: 1)
        },
        VectorCase(name: "frame-length-implausible", summary: "a length field over 1 GiB") {
            let files = try await standard()
            return patched(files, segments(files)[0]) { $0[offset(of: "key-4", in: $0) + 7] = 0xF0 }
        },
        VectorCase(name: "frame-length-changed", summary: "a length field one larger (the CRC then fails)") {
            flipping(try await standard(), key: "key-4", at: 4, mask: 0x01)
        },
        VectorCase(name: "frame-kind-unknown", summary: "kind 9, resealed", files: standardFrame("key-4") { $0.kind = 9 }),
        VectorCase(name: "frame-flags-unknown", summary: "flag bit 3, resealed", files: standardFrame("key-4") { $0.flags = 8 }),
        VectorCase(name: "frame-expiry-on-tombstone", summary: "a tombstone carrying an expiry (flag bit 2), resealed") {
            let files = try await standard()
            return resealed(files, segments(files)[0]) { segment in
                let index = segment.frames.firstIndex { $0.kind == 3 }!
                segment.frames[index].flags |= 4
                segment.frames[index].expiry = 1_000
            }
        },
        VectorCase(name: "frame-key-too-long", summary: "a 1,025-byte key, resealed", files: standardFrame("key-4") {
            $0.key = [UInt8](repeating: UInt8(ascii: "k"), count: 1025)
        }),
        VectorCase(name: "frame-key-1024", summary: "a 1,024-byte key: valid", files: standardFrame("key-4") {
            $0.key = [UInt8](repeating: UInt8(ascii: "k"), count: 1024)
        }),
        VectorCase(name: "frame-key-empty", summary: "a value with an empty key, resealed", files: standardFrame("key-4") { $0.key = [] }),
        VectorCase(name: "frame-tombstone-with-payload", summary: "a tombstone carrying a payload, resealed") {
            let files = try await standard()
            return resealed(files, segments(files)[0]) { segment in
                segment.frames[segment.frames.firstIndex { $0.kind == 3 }!].payload = [1]
            }
        },
        VectorCase(name: "frame-marker-with-key", summary: "the closing marker with a key, resealed: nothing follows, so a torn tail") {
            let files = try await standard()
            return resealed(files, segments(files)[0]) { $0.frames[$0.frames.count - 1].key = Array("x".utf8) }
        },
        VectorCase(name: "frame-sequence-repeated", summary: "a record numbered like the one before it, resealed") {
            let files = try await standard()
            return resealed(files, segments(files)[0]) { segment in
                let index = frameIndex(segment, key: "key-5")
                segment.frames[index].sequence = segment.frames[index - 1].sequence
            }
        },
        VectorCase(name: "frame-sequence-jump", summary: "a record numbered 10 too high, resealed", files: standardFrame("key-5") { $0.sequence += 10 }),
        VectorCase(name: "frame-watermark", summary: "a watermark bit flipped (the CRC fails)") {
            flipping(try await standard(), key: "key-4", at: 21, mask: 0x01)
        },
        VectorCase(name: "frame-payload", summary: "a payload bit flipped") {
            flipping(try await standard(), key: "key-4", at: 28 + 5 + 3)
        },
        VectorCase(name: "frame-in-sealed-segment", summary: "a bit flipped in a segment that is not the newest") {
            flipping(try await multi(), key: "key-3", at: 40)
        },
        VectorCase(name: "frame-cut-in-sealed-segment", summary: "a sealed segment that ends inside a record") {
            let files = try await multi()
            return patched(files, segments(files)[0]) { $0.removeLast(20) }
        },
    ]

    // MARK: Damaged headers (the second of several segments)

    static func header(_ edit: @escaping @Sendable (inout [UInt8]) -> Void, reseal: Bool) -> @Sendable () async throws -> VectorFiles {
        {
            let files = try await multi()
            return patched(files, segments(files)[1]) { bytes in
                edit(&bytes)
                if reseal {
                    let size = Int(VectorBytes.load(bytes, at: 10) as UInt16)
                    VectorBytes.store(VectorBytes.crc32(bytes[0..<(size - 4)]), into: &bytes, at: size - 4)
                }
            }
        }
    }

    static let headers: [VectorCase] = [
        VectorCase(name: "header-magic", summary: "a magic byte changed", files: header({ $0[3] ^= 0x20 }, reseal: true)),
        VectorCase(name: "header-version-flipped", summary: "the version changed, CRC not: damage, not a newer version", files: header({ $0[8] = 3 }, reseal: false)),
        VectorCase(name: "header-version-1", summary: "version 1 with a valid CRC: the open is refused, nothing changed", files: header({ $0[8] = 1 }, reseal: true)),
        VectorCase(name: "header-version-3", summary: "version 3 with a valid CRC: the open is refused, nothing changed", files: header({ $0[8] = 3 }, reseal: true)),
        VectorCase(name: "header-grown-version-3", summary: "a 56-byte version-3 header, CRC in its last 4 bytes: refused as unsupported", files: header({ bytes in
            bytes[8] = 3
            bytes[10] = 56
            bytes.insert(contentsOf: [UInt8](repeating: 0, count: 8), at: 44)
        }, reseal: true)),
        VectorCase(name: "header-version-2-size-56", summary: "a version-2 header declaring 56 bytes, CRC at 52: damage", files: header({ bytes in
            bytes[10] = 56
            bytes.insert(contentsOf: [UInt8](repeating: 0, count: 8), at: 44)
        }, reseal: true)),
        VectorCase(name: "header-size-flipped", summary: "the header size field changed (its CRC then fails)", files: header({ $0[10] ^= 0x01 }, reseal: false)),
        VectorCase(name: "header-flags-unknown", summary: "flag bit 1, resealed", files: header({ $0[12] = 2 }, reseal: true)),
        VectorCase(name: "header-base-mismatch", summary: "a base other than the file name's, resealed", files: header({ $0[16] &+= 1 }, reseal: true)),
        VectorCase(name: "header-cover-end-appended", summary: "a cover end on an appended segment, resealed", files: header({ $0[24] = 1 }, reseal: true)),
        VectorCase(name: "header-cover-end-before-base", summary: "a rewritten segment whose cover end is before its base, resealed", files: header({ bytes in
            bytes[12] = 1
            VectorBytes.store(UInt64(1), into: &bytes, at: 24)
        }, reseal: true)),
        VectorCase(name: "header-salt-zero", summary: "a zero salt, resealed", files: header({ bytes in
            VectorBytes.store(UInt64(0), into: &bytes, at: 32)
        }, reseal: true)),
        VectorCase(name: "header-reserved", summary: "a non-zero reserved field, resealed", files: header({ $0[41] = 1 }, reseal: true)),
        VectorCase(name: "header-crc", summary: "the header CRC changed", files: header({ $0[45] ^= 0x01 }, reseal: false)),
        VectorCase(name: "header-truncated", summary: "a segment file of 20 bytes", files: header({ $0 = Array($0[..<20]) }, reseal: false)),
        VectorCase(name: "header-newest-torn", summary: "the newest segment cut inside its header: damage, never a torn tail") {
            let files = try await multi()
            return patched(files, segments(files).last!) { $0 = Array($0[..<30]) }
        },
    ]

    // MARK: Batches

    static let batches: [VectorCase] = [
        VectorCase(name: "batch-first-damaged", summary: "a batch's first record damaged: the rest of it is skipped as orphans") {
            flipping(try await standard(), key: "batch-0", at: 35)
        },
        VectorCase(name: "batch-middle-damaged", summary: "a batch's second record damaged: reported there; its intact first record discarded with it") {
            flipping(try await standard(), key: "batch-1", at: 35)
        },
        VectorCase(name: "batch-last-damaged", summary: "a batch's last record damaged") {
            flipping(try await standard(), key: "batch-2", at: 35)
        },
        VectorCase(name: "batch-continuation-without-start", summary: "a lone record flagged as a batch continuation, resealed", files: standardFrame("key-5") { $0.flags = 2 }),
        VectorCase(name: "batch-interrupted", summary: "a batch's last record flagged as a lone record, resealed: the batch is broken at its start", files: standardFrame("batch-2") { $0.flags = 0 }),
        VectorCase(name: "batch-never-ends", summary: "a batch's last record flagged to continue, resealed: the next lone record interrupts it", files: standardFrame("batch-2") { $0.flags = 3 }),
    ]

    // MARK: The segment chain

    static let chain: [VectorCase] = [
        VectorCase(name: "chain-segment-missing", summary: "a middle segment deleted: a gap in the sequence numbers") {
            var files = try await multi()
            files[segments(files)[1]] = nil
            return files
        },
        VectorCase(name: "chain-segment-overlapping", summary: "a copy of the newest segment named (and headed) one past the first segment's base") {
            var files = try await multi()
            let names = segments(files)
            var copy = VectorSegment(parsing: files[names.last!]!)
            let base = VectorSegment(parsing: files[names[0]]!).base + 1
            VectorBytes.store(base, into: &copy.header, at: 16)
            files[VectorBytes.segmentName(base)] = copy.encoded()
            return files
        },
        VectorCase(name: "chain-empty-middle-segment", summary: "a middle segment with only its header") {
            let files = try await multi()
            return patched(files, segments(files)[1]) { $0 = Array($0[..<48]) }
        },
    ]
}
