// The two records the index keeps in flat arrays, and their layout, which a snapshot holds
// as it lies in memory.
extension CacheIndex {
    /// One key's entry. Its key lives in the arena; `blob` is the slot of its blob.
    struct Entry {
        var created: Int64
        var expiry: Int64
        var access: Int64
        var journaledAccess: Int64
        var keyOffset: UInt32
        /// Low 32 bits of the key's `KeyHash`.
        var keyHash: UInt32
        /// The blob's slot; -1 while the entry slot is free.
        var blob: Int32
        var older: Int32 = -1
        var newer: Int32 = -1
        /// The key's length in its low 28 bits, the four flags above them (so that an entry
        /// takes 56 bytes, not 64).
        private var lengthAndFlags: UInt32

        init(created: Int64, expiry: Int64, access: Int64, journaledAccess: Int64, keyOffset: UInt32,
             keyLength: UInt32, keyHash: UInt32, blob: Int32, pinned: Bool, orderJournaled: Bool) {
            precondition(keyLength <= Self.lengthMask, "a key of 256 MiB or more")
            self.created = created
            self.expiry = expiry
            self.access = access
            self.journaledAccess = journaledAccess
            self.keyOffset = keyOffset
            self.keyHash = keyHash
            self.blob = blob
            lengthAndFlags = keyLength | (pinned ? Self.pinnedBit : 0) | (orderJournaled ? Self.orderJournaledBit : 0)
        }

        private static let lengthMask: UInt32 = (1 << 28) - 1
        private static let protectedBit: UInt32 = 1 << 28
        private static let unmovedBit: UInt32 = 1 << 29
        private static let pinnedBit: UInt32 = 1 << 30
        private static let orderJournaledBit: UInt32 = 1 << 31

        var keyLength: UInt32 {
            get { lengthAndFlags & Self.lengthMask }
            set {
                precondition(newValue <= Self.lengthMask, "a key of 256 MiB or more")
                lengthAndFlags = lengthAndFlags & ~Self.lengthMask | newValue
            }
        }
        var pinned: Bool { lengthAndFlags & Self.pinnedBit != 0 }
        /// False when the entry moved in LRU order since the journal last said where it is.
        var orderJournaled: Bool {
            get { lengthAndFlags & Self.orderJournaledBit != 0 }
            set { lengthAndFlags = newValue ? lengthAndFlags | Self.orderJournaledBit : lengthAndFlags & ~Self.orderJournaledBit }
        }
        /// In the protected segment of a segmented LRU (`CacheIndex+Recency.swift`): used again
        /// since it was stored. Saved by snapshots and by a rewrite's `set` records.
        var isProtected: Bool {
            get { lengthAndFlags & Self.protectedBit != 0 }
            set { lengthAndFlags = newValue ? lengthAndFlags | Self.protectedBit : lengthAndFlags & ~Self.protectedBit }
        }
        /// Set on every entry when a journal rewrite takes its records, cleared when the entry
        /// is used: those still set when the rewrite is installed are where it put them.
        /// Never saved (a snapshot clears it).
        var unmovedSinceRewrite: Bool {
            get { lengthAndFlags & Self.unmovedBit != 0 }
            set { lengthAndFlags = newValue ? lengthAndFlags | Self.unmovedBit : lengthAndFlags & ~Self.unmovedBit }
        }
    }

    /// One stored blob and how many entries refer to it.
    struct Blob {
        let id: BlobID
        var rawLength: Int64
        var payloadLength: Int64
        var offset: UInt64
        /// Pack segment number, or `Blob.loose`.
        var segment: UInt32
        var references: Int32
        var pinnedReferences: Int32
        var codec: CodecTag

        static let loose = UInt32.max

        init(_ info: BlobInfo, references: Int32 = 0, pinnedReferences: Int32 = 0) {
            id = info.id
            rawLength = Int64(info.rawLength)
            payloadLength = Int64(info.payloadLength)
            codec = info.codec
            (segment, offset) = Self.encode(info.place)
            self.references = references
            self.pinnedReferences = pinnedReferences
        }

        var info: BlobInfo {
            BlobInfo(id: id, codec: codec, rawLength: Int(rawLength), payloadLength: Int(payloadLength),
                     place: segment == Self.loose ? .loose : .packed(segment: segment, offset: offset))
        }

        mutating func move(to info: BlobInfo) {
            codec = info.codec
            payloadLength = Int64(info.payloadLength)
            (segment, offset) = Self.encode(info.place)
        }

        private static func encode(_ place: BlobPlace) -> (UInt32, UInt64) {
            switch place {
            case .loose: (loose, 0)
            case .packed(let segment, let offset): (segment, offset)
            }
        }
    }
}

extension CacheIndex {
    /// How entries and blobs lie in memory (strides, field offsets, byte order), hashed: a
    /// snapshot holds them as they lie, so only a build with the same layout may use one.
    static let layoutSignature: UInt64 = {
        // The last number names the flags' layout (28: the protected bit joined them at bit
        // 28), so that a build reading them otherwise refuses the snapshot and replays.
        let numbers = Entry.layout + Blob.layout + [MemoryLayout<BlobID>.stride, 1.littleEndian == 1 ? 1 : 2, 28]
        return numbers.map { UInt64($0) }.withUnsafeBytes { KeyHash.hash($0, seed: 0x4243_4958) }
    }()
}

// Each offset comes from a key-path literal given straight to `offset(of:)`, which the
// optimizer folds to a constant. A key path kept first (in an array, say) is made at run
// time, and making a process's first key paths cost a tenth of a cold open.
extension CacheIndex.Entry {
    static var layout: [Int] {
        [MemoryLayout<Self>.stride, MemoryLayout<Self>.alignment,
         MemoryLayout<Self>.offset(of: \.created)!, MemoryLayout<Self>.offset(of: \.expiry)!,
         MemoryLayout<Self>.offset(of: \.access)!, MemoryLayout<Self>.offset(of: \.journaledAccess)!,
         MemoryLayout<Self>.offset(of: \.keyOffset)!, MemoryLayout<Self>.offset(of: \.keyHash)!,
         MemoryLayout<Self>.offset(of: \.lengthAndFlags)!,
         MemoryLayout<Self>.offset(of: \.blob)!, MemoryLayout<Self>.offset(of: \.older)!,
         MemoryLayout<Self>.offset(of: \.newer)!]
    }
}

extension CacheIndex.Blob {
    static var layout: [Int] {
        [MemoryLayout<Self>.stride, MemoryLayout<Self>.alignment,
         MemoryLayout<Self>.offset(of: \.id)!, MemoryLayout<Self>.offset(of: \.codec)!,
         MemoryLayout<Self>.offset(of: \.rawLength)!, MemoryLayout<Self>.offset(of: \.payloadLength)!,
         MemoryLayout<Self>.offset(of: \.offset)!, MemoryLayout<Self>.offset(of: \.segment)!,
         MemoryLayout<Self>.offset(of: \.references)!, MemoryLayout<Self>.offset(of: \.pinnedReferences)!]
    }
}
