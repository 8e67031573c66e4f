// Live bytes per pack segment, kept as blobs come, go and move, so that finding the segments
// worth collecting reads counters instead of walking the blobs.
extension CacheIndex {
    /// Segment numbers below this are counted in the array.
    private static let arraySegments: UInt32 = 1 << 16

    /// Bytes of live records in pack segment `number`.
    func liveBytes(inSegment number: UInt32) -> Int {
        number < Self.arraySegments
            ? (Int(number) < liveBytesBySegment.count ? liveBytesBySegment[Int(number)] : 0)
            : liveBytesOfHighSegments[number] ?? 0
    }

    mutating func accountPack(_ info: BlobInfo, sign: Int) {
        guard case .packed(let segment, _) = info.place else { return }
        if segment < Self.arraySegments {
            if Int(segment) >= liveBytesBySegment.count {
                liveBytesBySegment.append(contentsOf: repeatElement(0, count: Int(segment) + 1 - liveBytesBySegment.count))
            }
            liveBytesBySegment[Int(segment)] += sign * info.footprint
        } else {
            let live = liveBytesOfHighSegments[segment, default: 0] + sign * info.footprint
            liveBytesOfHighSegments[segment] = live == 0 ? nil : live
        }
        livePackedBytes += sign * info.footprint
    }
}
