// The bounds an index never passes, and the checks that hold a restored snapshot's records and
// a replayed journal's to them: those bytes may be damaged or forged, and the index indexes
// and sums by what they say.
extension CacheIndex {
    /// The most bytes a total of the index may count: far beyond any real cache, and far enough
    /// below `Int.max` that no sum of lengths (each at most `BlobInfo.maxLength`) overflows on
    /// the way. Damaged or forged records that would pass it are refused (`admits`).
    static let maxTotalBytes = 1 << 60

    /// Whether applying `record` keeps every total within `maxTotalBytes` (checked before it
    /// changes anything, so a damaged or forged journal cannot make a sum overflow).
    func admits(_ record: JournalRecord) -> Bool { record.withView { admits($0, hashes: hashes(of: $0)) } }

    /// `admits(_:)` for a record parsed in place, whose `hashes(of:)` are given.
    func admits(_ record: JournalRecordView, hashes: RecordHashes) -> Bool {
        switch record {
        case .set(let entry):
            let info = entry.blob
            if let known = blobSlot(of: info.id, hash: hashes.blob) {   // counted at its own length (`upsert`)
                return entryLogicalBytes + Int(blobs[Int(known)].rawLength) <= Self.maxTotalBytes
            }
            return entryLogicalBytes + info.rawLength <= Self.maxTotalBytes
                && logicalBytes + info.rawLength <= Self.maxTotalBytes && storedBytes + info.footprint <= Self.maxTotalBytes
        case .relocate(let info):
            return storedBytes + info.footprint <= Self.maxTotalBytes
        case .access, .remove, .removeAll:
            return true
        }
    }

    /// Whether every restored blob record has lengths, a segment number and an offset that a
    /// store could have written (checked before anything is summed or indexed by them: the
    /// records may be damaged while their hash is still being checked).
    static func plausibleBlobs(_ blobs: FlatArray<Blob>) -> Bool {
        blobs.withUnsafeBufferPointer { blobs in
            let raw = UnsafeRawBufferPointer(blobs)
            return blobs.indices.allSatisfy { plausibleBlob(at: $0 * MemoryLayout<Blob>.stride, in: raw) != nil }
        }
    }

    /// The blob record at byte `offset` of `bytes` (which must hold it), when it has lengths, a
    /// segment number and an offset that a store could have written; else `nil`.
    static func plausibleBlob(at offset: Int, in bytes: UnsafeRawBufferPointer) -> Blob? {
        // The codec byte read as a byte, before the record is read as a `Blob`: a `CodecTag`
        // holding another value is not one.
        guard CodecTag(rawValue: bytes[offset + MemoryLayout<Blob>.offset(of: \Blob.codec)!]) != nil else { return nil }
        let blob = bytes.loadUnaligned(fromByteOffset: offset, as: Blob.self)
        guard blob.rawLength >= 0, blob.rawLength <= BlobInfo.maxLength,
              blob.payloadLength >= 0, blob.payloadLength <= BlobInfo.maxLength,
              blob.segment == Blob.loose
                || (PackFormat.isValidSegmentNumber(blob.segment) && blob.offset <= UInt64(Int32.max) * 16)
        else { return nil }
        return blob
    }

    /// What restored entries add up to, after checking that every entry names a blob and a key
    /// range that exist and that the LRU links form one chain from `oldest` to `newest` over
    /// the unpinned entries: pinned entries, summed value sizes, and the references each blob
    /// should count (which the caller compares with the blobs' own). Sums the blobs' lengths:
    /// `plausibleBlobs` must have passed first.
    static func checkedEntries(_ entries: FlatArray<Entry>, blobs: FlatArray<Blob>, keyBytes: Int,
                                       oldest: Int32, newest: Int32)
        -> (pinnedEntries: Int, entryLogicalBytes: Int, earliestExpiry: Int64, references: [Int32], pinnedReferences: [Int32],
            protectedOldest: Int32, protectedEntries: Int)? {
        entries.withUnsafeBufferPointer { entries in
            blobs.withUnsafeBufferPointer { blobs -> (Int, Int, Int64, [Int32], [Int32], Int32, Int)? in
                var references = [Int32](repeating: 0, count: blobs.count)
                var pinnedReferences = [Int32](repeating: 0, count: blobs.count)
                var pinned = 0, logical = 0, unpinned = 0, earliest = Int64.max
                for entry in entries {
                    guard entry.blob >= 0, Int(entry.blob) < blobs.count,
                          Int(entry.keyOffset) + Int(entry.keyLength) <= keyBytes else { return nil }
                    earliest = min(earliest, entry.expiry)
                    references[Int(entry.blob)] += 1
                    logical += Int(blobs[Int(entry.blob)].rawLength)
                    guard logical <= maxTotalBytes else { return nil }
                    if entry.pinned {
                        guard !entry.isProtected else { return nil }
                        pinnedReferences[Int(entry.blob)] += 1
                        pinned += 1
                    } else {
                        unpinned += 1
                    }
                }
                // The chain: from oldest, each newer link points back, ending at newest; the
                // protected entries, if any, are its newest end.
                var cursor = oldest, previous: Int32 = -1, walked = 0
                var protectedOldest: Int32 = -1, protected = 0
                while cursor >= 0 {
                    guard Int(cursor) < entries.count, walked < unpinned, !entries[Int(cursor)].pinned,
                          entries[Int(cursor)].older == previous else { return nil }
                    if entries[Int(cursor)].isProtected {
                        if protectedOldest < 0 { protectedOldest = cursor }
                        protected += 1
                    } else if protectedOldest >= 0 {
                        return nil
                    }
                    previous = cursor
                    cursor = entries[Int(cursor)].newer
                    walked += 1
                }
                guard walked == unpinned, previous == newest else { return nil }
                return (pinned, logical, earliest, references, pinnedReferences, protectedOldest, protected)
            }
        }
    }
}
